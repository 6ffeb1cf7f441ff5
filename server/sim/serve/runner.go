package serve

import (
	"fmt"

	"github.com/spf13/pflag"
)

// runnerArgs are vllm serve's model-runner flags: --runner and --convert, and the deprecated
// --task, which vLLM still maps onto a runner.
type runnerArgs struct {
	runner, convert, task *string
}

func defineRunnerFlags(fs *pflag.FlagSet) *runnerArgs {
	return &runnerArgs{
		runner:  fs.String("runner", "auto", "Model runner: auto or generate serve completions and chat; pooling serves /v1/embeddings instead"),
		convert: fs.String("convert", "auto", "Adapt the model: embed (with --runner auto, a pooling runner), classify, reward or none"),
		task:    fs.String("task", "", "[deprecated] embed or embedding run the pooling runner, generate the generate runner"),
	}
}

// applyRunner resolves the runner as vLLM's ModelConfig does for a text generation model:
// generate unless --runner pooling, --convert embed or a pooling --task asks for pooling.
func (o *Options) applyRunner(a *runnerArgs) error {
	if err := choice("runner", *a.runner, "auto", "draft", "generate", "pooling"); err != nil {
		return err
	}
	if err := choice("convert", *a.convert, "auto", "none", "embed", "classify", "reward"); err != nil {
		return err
	}
	if *a.task != "" {
		if err := choice("task", *a.task, "auto", "generate", "embedding", "embed", "classify", "score", "reward", "transcription", "draft"); err != nil {
			return err
		}
	}
	switch *a.task {
	case "classify", "score", "reward", "transcription":
		return &UsageError{fmt.Sprintf("--task %s: this server (vllmtop sim) simulates generate and embed models only", *a.task)}
	}
	switch *a.convert {
	case "classify", "reward":
		return &UsageError{fmt.Sprintf("--convert %s: this server (vllmtop sim) simulates generate and embed models only", *a.convert)}
	}
	pooling := *a.runner == "pooling" || (*a.runner == "auto" && (*a.convert == "embed" || *a.task == "embed" || *a.task == "embedding"))
	if pooling && (*a.task == "generate" || *a.task == "draft") {
		return &UsageError{fmt.Sprintf("--task %s does not belong to --runner pooling", *a.task)}
	}
	o.Pooling = pooling
	return nil
}

// choice is argparse's check of a flag with choices, with its message.
func choice(flag, value string, choices ...string) error {
	for _, c := range choices {
		if value == c {
			return nil
		}
	}
	list := ""
	for i, c := range choices {
		if i > 0 {
			list += ", "
		}
		list += "'" + c + "'"
	}
	return &UsageError{fmt.Sprintf("argument --%s: invalid choice: '%s' (choose from %s)", flag, value, list)}
}
