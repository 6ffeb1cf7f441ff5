package serve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/vllmtop/vllmtop/server/sim"
)

// maxEmbeddingDims caps the vector a response carries: the model's hidden size, at most this.
const maxEmbeddingDims = 8192

// embedRequest is the body of POST /v1/embeddings with a text (completion-style) input.
type embedRequest struct {
	Model                string          `json:"model"`
	Input                json.RawMessage `json:"input"`
	Dimensions           *int            `json:"dimensions"`
	EncodingFormat       string          `json:"encoding_format"`
	TruncatePromptTokens *int            `json:"truncate_prompt_tokens"`
	User                 *string         `json:"user"`
}

// embeddings serves /v1/embeddings for a pooling runner: each input is one engine request
// that only prefills (one sampled token, never reported), answered with a deterministic unit
// vector. A generate runner has no such route in vLLM, so the answer is FastAPI's 404.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	if !s.opts.Pooling {
		writeJSON(w, http.StatusNotFound, []byte(`{"detail":"Not Found"}`))
		return
	}
	var req embedRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.knownModel(req.Model) {
		s.modelNotFound(w, req.Model)
		return
	}
	dims, ok := s.embedDims(w, &req)
	if !ok {
		return
	}
	inputs, ok := s.embedInputs(w, &req)
	if !ok {
		return
	}
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = randomHex(8)
	}
	total := 0
	reqs := make([]sim.Request, len(inputs))
	for i, p := range inputs {
		total += len(p.ids)
		ids := p.ids
		if len(ids) >= s.setup.MaxModelLen {
			// The engine keeps a slot for the sampled token; one prompt token less times the same.
			ids = ids[len(ids)-s.setup.MaxModelLen+1:]
		}
		reqs[i] = sim.Request{ID: id, Prompt: ids, MaxTokens: 1, IgnoreEOS: true, N: 1}
	}
	c := newChunker("embd-"+id, false, len(inputs), s.modelName, total)
	if req.Model != "" {
		c.model = req.Model
	}
	streams, ok := s.submitChoices(w, reqs, c, nil, "")
	if !ok {
		return
	}
	if _, ok := s.collectChoices(w, r, streams, c); !ok {
		return
	}
	writeJSON(w, http.StatusOK, appendEmbedResponse(nil, c, inputs, dims, req.EncodingFormat == "base64"))
}

// embedDims is the vector length: the model's hidden size (capped), or a smaller dimensions.
// The simulator serves every model as a Matryoshka one, so any dimensions up to it is taken.
func (s *Server) embedDims(w http.ResponseWriter, req *embedRequest) (int, bool) {
	switch req.EncodingFormat {
	case "", "float", "base64":
	case "bytes":
		writeError(w, http.StatusBadRequest, "BadRequestError", "`encoding_format` bytes is not supported: this server (vllmtop sim) answers float or base64. (parameter=encoding_format)", ptr("encoding_format"))
		return 0, false
	default:
		writeError(w, http.StatusBadRequest, "Bad Request", "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'encoding_format'), 'msg': \"Input should be 'float', 'base64' or 'bytes'\"}", ptr("body.encoding_format"))
		return 0, false
	}
	dims := min(max(s.setup.ModelProfile.HiddenSize, 1), maxEmbeddingDims)
	if req.Dimensions == nil {
		return dims, true
	}
	if d := *req.Dimensions; d < 1 || d > dims {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("dimensions must be between 1 and %d, got %d", dims, d), ptr("dimensions"))
		return 0, false
	}
	return *req.Dimensions, true
}

// embedInputs reads input as vLLM reads it (a string, strings, token ids or token id lists)
// and applies truncate_prompt_tokens (-1: the context length), keeping each input's end.
func (s *Server) embedInputs(w http.ResponseWriter, req *embedRequest) ([]promptInput, bool) {
	inputs, msg := completionPrompts(req.Input)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "BadRequestError", strings.ReplaceAll(msg, "'prompt'", "'input'"), ptr("input"))
		return nil, false
	}
	maxLen := s.setup.MaxModelLen
	keep := 0
	if t := req.TruncatePromptTokens; t != nil {
		switch {
		case *t == -1:
			keep = maxLen
		case *t < 1:
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("truncate_prompt_tokens must be -1 or at least 1, got %d", *t), ptr("truncate_prompt_tokens"))
			return nil, false
		case *t > maxLen:
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("truncate_prompt_tokens value (%d) is greater than max_model_len (%d). Please, select a smaller truncation size.", *t, maxLen), nil)
			return nil, false
		default:
			keep = *t
		}
	}
	for i := range inputs {
		ids := inputs[i].ids
		if keep > 0 && len(ids) > keep {
			inputs[i].ids = ids[len(ids)-keep:]
		}
		switch n := len(inputs[i].ids); {
		case n == 0:
			writeError(w, http.StatusBadRequest, "BadRequestError", "The prompt cannot be empty.", ptr("input"))
			return nil, false
		case n > maxLen:
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", maxLen, n), nil)
			return nil, false
		}
	}
	return inputs, len(inputs) > 0 || emptyInput(w)
}

func emptyInput(w http.ResponseWriter) bool {
	writeError(w, http.StatusBadRequest, "BadRequestError", "The prompt cannot be empty.", ptr("input"))
	return false
}

// appendEmbedResponse writes vLLM's EmbeddingResponse: one vector per input, in order.
func appendEmbedResponse(b []byte, c *chunker, inputs []promptInput, dims int, b64 bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.id)
	b = append(b, `,"object":"list","created":`...)
	b = appendInt(b, c.created)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.model)
	b = append(b, `,"data":[`...)
	for i, p := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"object":"embedding","embedding":`...)
		b = appendVector(b, embedding(p.ids, dims), b64)
		b = append(b, '}')
	}
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = appendInt(b, int64(c.promptTokens))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(c.promptTokens))
	return append(b, `,"completion_tokens":0,"prompt_tokens_details":null}}`...)
}

// appendVector writes v as a JSON list of float32 values, or as base64 of their
// little-endian bytes (encoding_format "base64").
func appendVector(b []byte, v []float32, b64 bool) []byte {
	if b64 {
		raw := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		return appendJSONString(b, base64.StdEncoding.EncodeToString(raw))
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']')
}

// embedding is a deterministic unit vector of dims values for the token ids: the same input
// always embeds the same, as a real model's would (vLLM normalizes embeddings by default).
func embedding(ids []int, dims int) []float32 {
	h := uint64(14695981039346656037)
	for _, id := range ids {
		h = (h ^ uint64(id)) * 1099511628211
	}
	v := make([]float32, dims)
	var sum float64
	for i := range v {
		h += 0x9E3779B97F4A7C15
		z := h
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		x := float64(z>>11)/(1<<52) - 1 // in [-1, 1)
		v[i] = float32(x)
		sum += x * x
	}
	if norm := math.Sqrt(sum); norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}
