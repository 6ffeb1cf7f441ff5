package serve

import (
	"bytes"
	"net/http"
	"net/http/httptest"
)

// Admission is what a generation request the server accepted asks of its engine: the first
// prompt's token ids, as the server tokenizes them (the chat template included), and the
// max_tokens, min_tokens and ignore_eos it read from the body.
type Admission struct {
	Prompt    []int
	MaxTokens int
	MinTokens int
	IgnoreEOS bool
}

// Refusal is the server's answer to a request it did not accept: the HTTP status and body.
type Refusal struct {
	Status int
	Body   []byte
}

// Admit answers a POST of body to path as the simulated server's front end would, without
// an engine: the routes it serves (a path it does not: 404), the body's parameters, the model
// and the lengths, with the same checks and messages as the HTTP server. A transport that
// drives the engine without HTTP (the virtual clock) sends every request through it, so that
// a request the server would refuse is refused there too.
func (p *Plan) Admit(path string, body []byte) (Admission, *Refusal) {
	chat := path == "/v1/chat/completions"
	if p.opts.Pooling || (!chat && path != "/v1/completions") {
		return Admission{}, &Refusal{Status: http.StatusNotFound, Body: []byte(`{"detail":"Not Found"}`)}
	}
	s := &Server{opts: p.opts, setup: p.setup, root: p.setup.Model, modelName: p.ServedModel()}
	w := httptest.NewRecorder()
	a, ok := s.admit(w, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)), chat)
	if !ok {
		return Admission{}, &Refusal{Status: w.Code, Body: w.Body.Bytes()}
	}
	return Admission{Prompt: a.prompts[0].ids, MaxTokens: a.maxTokens[0], MinTokens: a.req.MinTokens, IgnoreEOS: a.req.IgnoreEOS}, nil
}
