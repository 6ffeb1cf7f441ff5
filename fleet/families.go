package fleet

import "bytes"

// rowFamilies are the metric families a row reads, under every name scrape maps them from
// (scrape/names.go) and the PromQL of promql.go asks for. A direct scrape keeps only these
// before parsing: a vLLM exposition is about 60 KB, most of it histograms no row shows, and
// parsing is most of a fleet's CPU (see BenchmarkFleetRefresh). The raw body still goes whole
// to Tap and LastBody.
var rowFamilies = map[string]bool{
	"process_start_time_seconds": true,

	"vllm:num_requests_running": true, "vllm:num_requests_waiting": true,
	"vllm:kv_cache_usage_perc": true, "vllm:gpu_cache_usage_perc": true,
	"vllm:num_preemptions_total": true, "vllm:prompt_tokens_total": true, "vllm:generation_tokens_total": true,
	"vllm:prefix_cache_queries_total": true, "vllm:prefix_cache_hits_total": true,
	"vllm:gpu_prefix_cache_queries_total": true, "vllm:gpu_prefix_cache_hits_total": true,
	"vllm:request_success_total":       true,
	"vllm:time_to_first_token_seconds": true,
	"vllm:inter_token_latency_seconds": true, "vllm:time_per_output_token_seconds": true,
	"vllm:request_queue_time_seconds": true, "vllm:request_prefill_time_seconds": true, "vllm:request_prompt_tokens": true,

	"sglang:num_running_reqs": true, "sglang:num_requests_running": true,
	"sglang:num_queue_reqs": true, "sglang:num_requests_waiting": true, "sglang:queue_req": true,
	"sglang:token_usage": true, "sglang:prompt_tokens_total": true, "sglang:generation_tokens_total": true,
	"sglang:time_to_first_token_seconds": true,
	"sglang:inter_token_latency_seconds": true, "sglang:time_per_output_token_seconds": true,
	"sglang:queue_time_seconds": true, "sglang:waiting_request_latency_seconds": true, "sglang:request_prompt_tokens": true,

	"tgi_batch_current_size": true, "tgi_queue_size": true, "tgi_request_success": true, "tgi_request_failure": true,
	"tgi_request_queue_duration": true, "tgi_request_input_length": true,
}

// keepRowFamilies copies the lines of body that belong to rowFamilies: their # HELP and
// # TYPE lines and their samples (a histogram's _bucket, _sum and _count). Blank and other
// comment lines go.
func keepRowFamilies(body []byte) []byte {
	out := make([]byte, 0, len(body)/3)
	for len(body) > 0 {
		line := body
		rest := []byte(nil)
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, rest = body[:i+1], body[i+1:]
		}
		body = rest
		if keepLine(line) {
			out = append(out, line...)
		}
	}
	return out
}

func keepLine(line []byte) bool {
	var name []byte
	switch {
	case bytes.HasPrefix(line, []byte("# HELP ")), bytes.HasPrefix(line, []byte("# TYPE ")):
		name = line[len("# HELP "):]
		if i := bytes.IndexAny(name, " \t\r\n"); i >= 0 {
			name = name[:i]
		}
	case len(line) == 0 || line[0] == '#':
		return false
	default:
		name = line
		if i := bytes.IndexAny(name, "{ \t\r\n"); i >= 0 {
			name = name[:i]
		}
	}
	if rowFamilies[string(name)] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if bytes.HasSuffix(name, []byte(suffix)) && rowFamilies[string(name[:len(name)-len(suffix)])] {
			return true
		}
	}
	return false
}
