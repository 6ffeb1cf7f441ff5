package loadgen

import "fmt"

// More of vllm bench serve's backends.
const (
	BackendVLLM       = "vllm"              // the completions API, as openai
	BackendEmbeddings = "openai-embeddings" // POST /v1/embeddings, one answer per request
)

// refusedBackends are vllm bench serve's other backends, each with why vllmtop does not run it.
var refusedBackends = map[string]string{
	"openai-audio":              "sends audio files from vLLM's ASR datasets on the Hugging Face hub, which vllmtop does not read",
	"openai-embeddings-chat":    "embeds chat messages with images from multimodal datasets; use openai-embeddings for text",
	"openai-embeddings-clip":    "embeds images from multimodal datasets; use openai-embeddings for text",
	"openai-embeddings-vlm2vec": "embeds images from multimodal datasets; use openai-embeddings for text",
	"infinity-embeddings":       "is the Infinity embedding server's API, not vLLM's; use openai-embeddings",
	"infinity-embeddings-clip":  "is the Infinity embedding server's API, not vLLM's",
	"vllm-pooling":              "sends pooling inputs from multimodal or custom datasets to /pooling; use openai-embeddings for text",
	"vllm-rerank":               "needs vLLM's random-rerank dataset (a query and its documents) and a reranker model",
}

// backendRefusal is the one-line error for a backend vllmtop does not run.
func backendRefusal(backend string) error {
	if why, ok := refusedBackends[backend]; ok {
		return fmt.Errorf("--backend %s %s", backend, why)
	}
	return fmt.Errorf("--backend %q: want openai, vllm, openai-chat or openai-embeddings", backend)
}

// PoolingBackend reports whether backend answers with embeddings rather than generated text
// (vLLM's POOLING_BACKENDS): no sampling parameters, no tokens, only end-to-end latency.
func PoolingBackend(backend string) bool { return backend == BackendEmbeddings }
