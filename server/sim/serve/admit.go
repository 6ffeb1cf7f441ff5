package serve

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
)

// Admission is what a generation request the server accepted asks of its engine: each
// prompt's token ids, as the server tokenizes them (the chat template included), and its
// max_tokens, with the body's n (choices of each prompt), min_tokens, ignore_eos and
// priority. The server submits N engine requests for each prompt.
type Admission struct {
	Prompts   [][]int
	MaxTokens []int
	N         int
	MinTokens int
	IgnoreEOS bool
	Priority  int
}

// Refusal is the server's answer to a request it did not accept: the HTTP status and body.
type Refusal struct {
	Status int
	Body   []byte
}

// Admit answers a POST of body to path, with header, as the simulated server's front end
// would, without an engine: the API key, the routes it serves (a path it does not: 404), the
// body's parameters, the model and the lengths, with the same checks and messages as the HTTP server. A transport that
// drives the engine without HTTP (the virtual clock) sends every request through it, so that
// a request the server would refuse is refused there too.
func (p *Plan) Admit(path string, header http.Header, body []byte) (Admission, *Refusal) {
	if u, err := url.Parse(path); err == nil {
		path = u.Path // a query goes with the path, as the HTTP server's mux reads it
	}
	path = "/" + strings.TrimLeft(path, "/")
	chat := path == "/v1/chat/completions"
	if p.opts.Pooling || (!chat && path != "/v1/completions") {
		return Admission{}, &Refusal{Status: http.StatusNotFound, Body: []byte(`{"detail":"Not Found"}`)}
	}
	s := &Server{opts: p.opts, setup: p.setup, root: p.setup.Model, modelName: p.ServedModel()}
	// A request made directly: httptest.NewRequest parses a whole HTTP message each time.
	r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: path}, Header: header.Clone(),
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
	if !p.Authorized(header) { // vLLM's outer middleware, as ServeHTTP runs it
		return Admission{}, &Refusal{Status: http.StatusUnauthorized, Body: []byte(`{"error":"Unauthorized"}`)}
	}
	w := httptest.NewRecorder()
	a, ok := s.admit(w, r, chat)
	if !ok {
		return Admission{}, &Refusal{Status: w.Code, Body: w.Body.Bytes()}
	}
	prompts := make([][]int, len(a.prompts))
	for i, p := range a.prompts {
		prompts[i] = p.ids
	}
	return Admission{Prompts: prompts, MaxTokens: a.maxTokens, N: a.n, MinTokens: a.req.MinTokens, IgnoreEOS: a.req.IgnoreEOS, Priority: a.req.Priority}, nil
}

// Authorized reports whether a request with header passes the server's API-key check
// (--api-key; none set: every request does).
func (p *Plan) Authorized(header http.Header) bool {
	if len(p.opts.APIKeys) == 0 {
		return true
	}
	return (&Server{opts: p.opts}).authorized(&http.Request{Header: header})
}

// ListedModel is one model of the server's /v1/models list: its served names, then its LoRA
// adapters (whose max_model_len the list does not give: 0).
type ListedModel struct {
	ID, Root    string
	MaxModelLen int
}

// Models is the server's /v1/models list, as its handler writes it.
func (p *Plan) Models() []ListedModel {
	var out []ListedModel
	for _, n := range listedNames(p.opts, p.ServedModel()) {
		out = append(out, ListedModel{ID: n, Root: p.setup.Model, MaxModelLen: p.setup.MaxModelLen})
	}
	for _, l := range p.opts.LoRAModules {
		out = append(out, ListedModel{ID: l.Name, Root: l.Path})
	}
	return out
}

// listedNames are the names /v1/models lists the base model under: every --served-model-name,
// else the one name it serves.
func listedNames(opts *Options, modelName string) []string {
	if len(opts.ServedModelNames) > 0 {
		return opts.ServedModelNames
	}
	return []string{modelName}
}
