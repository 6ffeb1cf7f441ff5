package serve

import (
	"encoding/json"
	"net/http"

	"github.com/vllmtop/vllmtop/server/sim"
)

// promptInput is one prompt of a request: its token ids and, for echo, its text.
type promptInput struct {
	ids  []int
	text string
}

// maxPrompts bounds the prompts of one completions request (each is n engine requests).
const maxPrompts = 1024

const (
	promptMissing = "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}"
	promptInvalid = "1 validation error:\n  {'type': 'invalid_type', 'loc': ('body', 'prompt'), 'msg': 'Input should be a valid string, a list of strings, a list of token ids or a list of token id lists'}"
)

// completionPrompts reads a completions prompt as vLLM takes it: a string, a list of strings,
// a list of token ids, or a list of token id lists. Each element of a list is a prompt of its
// own. The error is a 400 message.
func completionPrompts(raw json.RawMessage) ([]promptInput, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, promptMissing
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []promptInput{{sim.Tokenize(s), s}}, ""
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return []promptInput{{ids, sim.Detokenize(ids)}}, ""
	}
	var out []promptInput
	var texts []string
	var lists [][]int
	switch {
	case json.Unmarshal(raw, &texts) == nil:
		for _, t := range texts {
			out = append(out, promptInput{sim.Tokenize(t), t})
		}
	case json.Unmarshal(raw, &lists) == nil:
		for _, l := range lists {
			out = append(out, promptInput{l, sim.Detokenize(l)})
		}
	default:
		return nil, promptInvalid
	}
	if len(out) > maxPrompts {
		return nil, "this server (vllmtop sim) serves at most 1024 prompts a request"
	}
	return out, ""
}

// requestPrompts tokenizes the request's messages (chat) or prompts, refusing a missing or
// empty one.
func requestPrompts(w http.ResponseWriter, req *genRequest, chat bool) ([]promptInput, bool) {
	var prompts []promptInput
	if chat {
		if len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}", ptr("body.messages"))
			return nil, false
		}
		prompts = []promptInput{{ids: chatPrompt(req.Messages, true)}}
	} else {
		var msg string
		if prompts, msg = completionPrompts(req.Prompt); msg != "" {
			writeError(w, http.StatusBadRequest, "BadRequestError", msg, ptr("prompt"))
			return nil, false
		}
	}
	if len(prompts) == 0 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "The prompt cannot be empty.", ptr("prompt"))
		return nil, false
	}
	for _, p := range prompts {
		if len(p.ids) == 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "The prompt cannot be empty.", ptr("prompt"))
			return nil, false
		}
	}
	return prompts, true
}
