package benchcli

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/app/cliflag"
	"github.com/vllmtop/vllmtop/loadgen"
)

// defineDatasets gives fs the dataset flags of vllm bench serve (vllm/benchmarks/datasets/
// datasets.py, add_dataset_parser) beyond the random, sharegpt and trace ones, with vLLM's
// defaults. Flags of datasets this build refuses are accepted, as vLLM accepts them with any
// dataset; the dataset itself is refused in a line.
func defineDatasets(fs *pflag.FlagSet, d *loadgen.DatasetConfig) {
	x := &d.Extra
	x.MM = loadgen.RandomMMConfig{BaseItems: 1, Limits: loadgen.DefaultMMLimits, Buckets: loadgen.DefaultMMBuckets}
	x.TimedTrace = loadgen.DefaultTimedTrace
	fs.Bool("no-stream", false, "Accepted for compatibility: dataset files are read whole, never streamed from a hub")
	fs.BoolVar(&x.NoOversample, "no-oversample", false, "Send only the file's prompts when it has fewer than --num-prompts")
	fs.BoolVar(&x.SkipChatTemplate, "skip-chat-template", false, "Send custom, spec_bench and hf prompts as written (vLLM applies the model's chat template on the client otherwise)")
	// The name vLLM's benchmark docs still write for the custom dataset.
	fs.BoolVar(&x.SkipChatTemplate, "custom-skip-chat-template", false, "The same as --skip-chat-template")
	fs.Bool("enable-multimodal-chat", false, "Accepted for compatibility: random-mm's images always go in the chat message")
	fs.BoolVar(&x.DisableShuffle, "disable-shuffle", false, "Keep the dataset's order instead of shuffling it with --seed")
	fs.IntVar(&x.CustomOutputLen, "custom-output-len", 256, "Output tokens of each custom request; -1 takes each line's output_tokens")
	fs.Bool("custom-ensure-client-side-data", false, "Accepted for compatibility: concerns custom_image, which this build refuses")
	fs.IntVar(&x.SpecBenchOutputLen, "spec-bench-output-len", 256, "Output tokens of each spec_bench request")
	fs.StringVar(&x.SpecBenchCategory, "spec-bench-category", "", "Spec-Bench category to send (default: all)")
	fs.IntVar(&x.Sonnet.InputLen, "sonnet-input-len", 550, "Most prompt tokens of a sonnet request")
	fs.IntVar(&x.Sonnet.OutputLen, "sonnet-output-len", 150, "Output tokens of each sonnet request")
	fs.IntVar(&x.Sonnet.PrefixLen, "sonnet-prefix-len", 200, "Tokens of the sonnet prefix every prompt shares")
	defineTimedTrace(fs, &x.TimedTrace)
	fs.Bool("self-timed", false, "Send a timed_trace at its timestamps (the default)")
	fs.Bool("no-self-timed", false, "Send a timed_trace at --request-rate, in file order")
	fs.Float64("blazedit-min-distance", 0, "Accepted for compatibility: concerns the blazedit hf dataset, which this build refuses")
	fs.Float64("blazedit-max-distance", 1, "Accepted for compatibility: concerns the blazedit hf dataset, which this build refuses")
	fs.Float64("asr-max-audio-len-sec", math.Inf(1), "Accepted for compatibility: concerns the ASR hf datasets, which this build refuses")
	fs.Float64("asr-min-audio-len-sec", 0, "Accepted for compatibility: concerns the ASR hf datasets, which this build refuses")
	fs.Int("random-batch-size", 1, "Prompts per request of the embeddings benchmark; only 1 here")
	fs.Bool("no-reranker", false, "Accepted for compatibility: concerns random-rerank, which this build refuses")
	fs.IntVar(&x.MM.BaseItems, "random-mm-base-items-per-request", 1, "Images per random-mm request, before --random-mm-num-mm-items-range-ratio")
	fs.Float64Var(&x.MM.ItemsRangeRatio, "random-mm-num-mm-items-range-ratio", 0, "Items per request uniform in [floor(n(1-r)), ceil(n(1+r))], 0 <= r <= 1")
	fs.Var(&mmLimits{&x.MM.Limits}, "random-mm-limit-mm-per-prompt", `Most items of each modality per request, JSON (default {"image": 255, "video": 1})`)
	fs.Var(&mmBuckets{&x.MM.Buckets}, "random-mm-bucket-config", "Item sizes (height, width, frames) and their probabilities (default {(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0})")
	for _, name := range []string{"random-mm-limit-mm-per-prompt", "random-mm-bucket-config"} {
		fs.Lookup(name).DefValue = "" // the usage gives the default in vLLM's form; pflag would repeat it
	}
	fs.StringVar(&x.HF.Subset, "hf-subset", "", "Subset of the hf dataset (a local export is one subset: recorded only)")
	fs.StringVar(&x.HF.Split, "hf-split", "", "Split of the hf dataset (a local export is one split: recorded only)")
	fs.StringVar(&x.HF.Name, "hf-name", "", "Hub id of the hf dataset whose local export --dataset-path is, e.g. philschmid/mt-bench")
	fs.IntVar(&x.HF.OutputLen, "hf-output-len", 0, "Output tokens of each hf request (default: the dataset's)")
	fs.String("bfcl-categories", "", "Accepted for compatibility: concerns the BFCL hf dataset, which this build refuses")
	p := &x.PrefixRepetition
	fs.IntVar(&p.PrefixLen, "prefix-repetition-prefix-len", 256, "Tokens of each shared prefix of prefix_repetition")
	fs.IntVar(&p.SuffixLen, "prefix-repetition-suffix-len", 256, "Tokens of each prompt's own suffix (input = prefix + suffix)")
	fs.IntVar(&p.NumPrefixes, "prefix-repetition-num-prefixes", 10, "Prefixes to generate; each is shared by num-prompts/num-prefixes prompts")
	fs.IntVar(&p.OutputLen, "prefix-repetition-output-len", 128, "Output tokens of each prefix_repetition request")
	fs.String("speed-bench-dataset-subset", "qualitative", "Accepted for compatibility: concerns speed_bench, which this build refuses")
	fs.Int("speed-bench-output-len", 4096, "Accepted for compatibility: concerns speed_bench, which this build refuses")
	fs.String("speed-bench-category", "", "Accepted for compatibility: concerns speed_bench, which this build refuses")
}

func defineTimedTrace(fs *pflag.FlagSet, t *loadgen.TimedTraceConfig) {
	fs.IntVar(&t.ChunkSize, "timed-trace-chunk-hash-size", t.ChunkSize, "Prompt tokens per hash id of a timed_trace (Mooncake's traces: 512)")
	fs.Float64Var(&t.SecMultiplier, "timed-trace-sec-multiplier", t.SecMultiplier, "Seconds per timestamp unit of a timed_trace (0.001 for milliseconds)")
	fs.StringVar(&t.LabelTimestamp, "timed-trace-label-timestamp", t.LabelTimestamp, "Field of a timed_trace line holding its timestamp")
	fs.StringVar(&t.LabelInput, "timed-trace-label-input-length", t.LabelInput, "Field of a timed_trace line holding its input length")
	fs.StringVar(&t.LabelOutput, "timed-trace-label-output-length", t.LabelOutput, "Field of a timed_trace line holding its output length")
	fs.StringVar(&t.LabelHashIDs, "timed-trace-label-hash-ids", t.LabelHashIDs, "Field of a timed_trace line holding its hash ids")
}

// finishDatasets completes the extra datasets' settings from the parsed runs and endpoint.
func (o *Options) finishDatasets(fs *pflag.FlagSet) error {
	d := &o.Dataset
	x := &d.Extra
	x.NumPrompts, x.Chat = o.Runs.NumPrompts, o.Client.Endpoint == loadgen.EndpointChat
	if n, _ := fs.GetInt("random-batch-size"); n != 1 {
		return cliflag.Usagef("--random-batch-size %d: requests of several prompts (vLLM's embeddings benchmark) are not sent by this build; give 1", n)
	}
	if d.Name == loadgen.DatasetCustom || d.Name == loadgen.DatasetSpecBench {
		if fs.Changed("num-prompts") && o.Runs.NumPrompts <= 0 { // vLLM: every prompt of the file
			o.Runs.NumPrompts, o.Runs.WholeFile, x.NumPrompts = loadgen.EveryPrompt, true, 0
		}
	}
	if d.Name != loadgen.DatasetTimedTrace {
		if fs.Changed("self-timed") {
			return cliflag.Usagef("--self-timed sends a timed_trace at its timestamps; --dataset-name %s has none", d.Name)
		}
		if fs.Changed("no-self-timed") { // vLLM refuses either outside timed_trace
			return cliflag.Usagef("--no-self-timed goes with --dataset-name timed_trace; --dataset-name %s has no timestamps", d.Name)
		}
		return nil
	}
	if fs.Changed("trace-block-size") {
		return cliflag.Usagef("--trace-block-size is mooncake's; a timed_trace's is --timed-trace-chunk-hash-size")
	}
	if err := x.TimedTrace.Check(); err != nil {
		return cliflag.Usagef("%v", err)
	}
	return nil
}

// selfTimed is whether a timed_trace goes at its timestamps: vLLM's default, unless
// --no-self-timed is given (and not --self-timed after it).
func selfTimed(fs *pflag.FlagSet) bool {
	on, _ := fs.GetBool("self-timed")
	off, _ := fs.GetBool("no-self-timed")
	if !fs.Changed("self-timed") && !fs.Changed("no-self-timed") {
		return true
	}
	return on && !off
}

// rangeRatio is --random-range-ratio: one ratio for both lengths, or a JSON object with an
// "input" and an "output" one, as vLLM 0.33 takes it.
type rangeRatio struct{ r *loadgen.RandomConfig }

func (v *rangeRatio) Type() string { return "float|json" }

func (v *rangeRatio) String() string {
	if v.r == nil {
		return "0"
	}
	if v.r.OutputRangeRatio == nil {
		return strconv.FormatFloat(v.r.RangeRatio, 'g', -1, 64)
	}
	return fmt.Sprintf(`{"input": %g, "output": %g}`, v.r.RangeRatio, *v.r.OutputRangeRatio)
}

func (v *rangeRatio) Set(s string) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		v.r.RangeRatio, v.r.OutputRangeRatio = f, nil
		return nil
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return fmt.Errorf(`want a number or {"input": r, "output": r}`)
	}
	for k := range m {
		if k != "input" && k != "output" {
			return fmt.Errorf(`unknown key %q: want "input" and "output"`, k)
		}
	}
	out := m["output"]
	v.r.RangeRatio, v.r.OutputRangeRatio = m["input"], &out
	return nil
}

// mmLimits is --random-mm-limit-mm-per-prompt.
type mmLimits struct{ m *map[string]int }

func (v *mmLimits) Set(s string) (err error) { *v.m, err = loadgen.ParseMMLimits(s); return err }
func (v *mmLimits) Type() string             { return "json" }
func (v *mmLimits) String() string {
	if v.m == nil || *v.m == nil {
		return ""
	}
	var parts []string
	for _, k := range []string{"image", "video", "audio"} {
		if n, ok := (*v.m)[k]; ok {
			parts = append(parts, fmt.Sprintf("%q: %d", k, n))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// mmBuckets is --random-mm-bucket-config.
type mmBuckets struct{ b *[]loadgen.MMBucket }

func (v *mmBuckets) Set(s string) (err error) { *v.b, err = loadgen.ParseMMBuckets(s); return err }
func (v *mmBuckets) Type() string             { return "dict" }
func (v *mmBuckets) String() string {
	if v.b == nil {
		return ""
	}
	var parts []string
	for _, b := range *v.b {
		parts = append(parts, fmt.Sprintf("(%d, %d, %d): %g", b.Height, b.Width, b.Frames, b.Prob))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
