package serve

import "strings"

// kvFamilyRules name the families of vLLM's KV Cache dashboard that a server without KV
// connectors or images never exports or never moves, with the reason: the panels that read
// them stay empty on such a vLLM too. The first rule whose family the expression reads wins.
var kvFamilyRules = []struct{ family, reason string }{
	{"vllm:nixl_", "connector-only: NixlConnector's transfer metrics (--kv-transfer-config)"},
	{"vllm:simple_kv_offload_", "connector-only: SimpleCPUOffloadConnector's metrics"},
	{"vllm:kv_offload_", "connector-only: OffloadingConnector's metrics"},
	{"vllm:num_requests_kv_fetch_by_stage", "connector-only: async KV loads of a KV consumer (--kv-transfer-config)"},
	{"vllm:external_prefix_cache_", "connector-only: no KV connector configured, its queries rate is 0"},
	{"vllm:mm_cache_", "multimodal-only: text-only requests, its queries rate is 0"},
}

// kvExpectedEmpty says why a KV Cache dashboard expression returns no data, if it does not.
func kvExpectedEmpty(expr string) (string, bool) {
	for _, r := range kvFamilyRules {
		if strings.Contains(expr, r.family) {
			return r.reason, true
		}
	}
	return "", false
}

// churnBody is a completion whose three-block prompt a client sends four times in turn, then
// never again: its blocks are hit (the KV Cache dashboard's reuse-gap panel), then evicted by
// the prompts after them on a small cache (its lifetime and idle-time panels).
func churnBody(client, n int) string {
	key := []byte{byte('a' + client)}
	for v := n / 4; ; v /= 26 { // letters only: the simulator makes a digit run a token of its own
		key = append(key, byte('a'+v%26))
		if v < 26 {
			break
		}
	}
	return `{"prompt":"Cache churn ` + string(key) + strings.Repeat(" paged attention block", 16) + `","max_tokens":16,"ignore_eos":true}`
}
