package fleet

import "github.com/vllmtop/vllmtop/scrape"

// rowFamilies are the metric families a row reads, under every name scrape maps them from
// (scrape/names.go) and the PromQL of promql.go asks for. A direct scrape parses only these
// (scrape.ParseSelected): a vLLM exposition is about 60 KB, most of it histograms no row
// shows, and parsing is most of a fleet's CPU (see BenchmarkFleetRefresh). The raw body still
// goes whole to Tap and LastBody.
var rowFamilies = map[string]bool{
	"process_start_time_seconds": true,
	"vllm:cache_config_info":     true, // the util column

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

// directOnly are the row families read from /metrics only: a Prometheus row leaves them
// out (cache_config_info is a label set, its util column shows "--").
var directOnly = map[string]bool{"vllm:cache_config_info": true}

// rowMeansOnly are the histograms of rowFamilies a row reads only the mean of (queue and
// prefill time, prompt length): their finite buckets, a third of what is kept, are skipped.
var rowMeansOnly = map[string]bool{
	"vllm:request_queue_time_seconds": true, "vllm:request_prefill_time_seconds": true, "vllm:request_prompt_tokens": true,
	"sglang:queue_time_seconds": true, "sglang:waiting_request_latency_seconds": true, "sglang:request_prompt_tokens": true,
	"tgi_request_queue_duration": true, "tgi_request_input_length": true,
}

// rowSelection is what a direct scrape parses (scrape.ParseSelected).
var rowSelection = func() *scrape.Selection {
	var whole, means []string
	for name := range rowFamilies {
		if rowMeansOnly[name] {
			means = append(means, name)
		} else {
			whole = append(whole, name)
		}
	}
	return scrape.NewSelection(whole, means)
}()
