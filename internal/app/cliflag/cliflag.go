// Package cliflag holds the types of vllmtop's list and unit flags (pflag.Value), each parsing
// and checking its value as the flag is read so that a bad value is a usage error naming the
// flag; the simulator's flags accepted on another command's line and passed on; and pflag's
// errors worded for people.
package cliflag

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vllmtop/vllmtop/internal/base/textfmt"
	"github.com/vllmtop/vllmtop/loadgen"
	"github.com/vllmtop/vllmtop/server/sim/serve"

	"github.com/vllmtop/vllmtop/internal/base/termwidth"
)

// value is a flag of type T: parse reads what was typed, format writes it back for the help.
type value[T any] struct {
	p      *T
	kind   string
	parse  func(string) (T, error)
	format func(T) string
}

func (v value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}

func (v value[T]) String() string { return v.format(*v.p) }
func (v value[T]) Type() string   { return v.kind }

// Counts is a comma list of positive integers: --max-concurrency 1,8,32.
func Counts(p *[]int) pflag.Value {
	return value[[]int]{p, "list", func(s string) ([]int, error) {
		return parseList(s, "want a positive integer or a comma list of them", func(f string) (int, bool) {
			n, err := strconv.Atoi(f)
			return n, err == nil && n > 0
		})
	}, func(xs []int) string { return joinList(xs, strconv.Itoa) }}
}

// Rates is a comma list of request rates, inf for all at once: --request-rate 1,2,inf.
func Rates(p *[]float64) pflag.Value {
	return value[[]float64]{p, "list", func(s string) ([]float64, error) {
		return parseList(s, "want requests per second (> 0 or inf) or a comma list of them", func(f string) (float64, bool) {
			r, err := strconv.ParseFloat(f, 64)
			return r, err == nil && r > 0
		})
	}, func(xs []float64) string { return joinList(xs, FormatRate) }}
}

// Percentiles is --metric-percentiles 50,90,99.
func Percentiles(p *[]float64) pflag.Value {
	return value[[]float64]{p, "list", loadgen.ParsePercentiles, func(xs []float64) string { return joinList(xs, FormatRate) }}
}

// Metrics is --percentile-metrics ttft,tpot,itl,e2el.
func Metrics(p *[]string) pflag.Value {
	return value[[]string]{p, "list", loadgen.ParsePercentileMetrics, func(xs []string) string { return strings.Join(xs, ",") }}
}

// Goodput is --goodput "ttft:200 tpot:50": service-level objectives in milliseconds.
func Goodput(p *loadgen.Goodput) pflag.Value {
	return value[loadgen.Goodput]{p, "objectives", func(s string) (loadgen.Goodput, error) {
		g, err := loadgen.ParseGoodput([]string{s})
		if err == nil && !g.Set() {
			err = errors.New("--goodput: want objectives such as ttft:200 tpot:50 (milliseconds)")
		}
		return g, err
	}, formatGoodput}
}

// formatGoodput writes objectives as --goodput reads them, so a command line can be rebuilt.
func formatGoodput(g loadgen.Goodput) string {
	var parts []string
	for _, o := range []struct {
		key string
		d   time.Duration
	}{{"ttft", g.TTFT}, {"tpot", g.TPOT}, {"e2el", g.E2EL}} {
		if o.d > 0 {
			parts = append(parts, o.key+":"+strconv.FormatFloat(float64(o.d)/float64(time.Millisecond), 'f', -1, 64))
		}
	}
	return strings.Join(parts, " ")
}

// Fields is --metadata "version=0.9 tp=1": key=value pairs, in order.
func Fields(p *[]loadgen.Field) pflag.Value {
	return value[[]loadgen.Field]{p, "key=value", func(s string) ([]loadgen.Field, error) {
		var out []loadgen.Field
		for _, kv := range strings.Fields(s) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--metadata %q: want key=value", kv)
			}
			out = append(out, loadgen.Field{Key: k, Value: v})
		}
		return out, nil
	}, func(fs []loadgen.Field) string {
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = fmt.Sprintf("%s=%v", f.Key, f.Value)
		}
		return strings.Join(parts, " ")
	}}
}

// Seconds is a number of seconds >= 0, as vLLM's --ready-check-timeout-sec.
func Seconds(p *time.Duration) pflag.Value {
	return value[time.Duration]{p, "seconds", func(s string) (time.Duration, error) {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, errors.New("want a number of seconds >= 0")
		}
		return time.Duration(x * float64(time.Second)), nil
	}, func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }}
}

// AddClient defines the flags of how a load's client talks to a server, shared by the commands
// that send load (bench, sweep, the dashboard): https trust, and the cap on one server-sent event.
func AddClient(fs *pflag.FlagSet, c *loadgen.ClientConfig) {
	fs.BoolVar(&c.Insecure, "insecure", false, "https: do not verify the server's certificate")
	fs.StringVar(&c.CAFile, "ca-file", "", "https: trust the PEM certificates in this file")
	c.MaxEventBytes = loadgen.DefaultMaxEventBytes
	fs.Var(Bytes(&c.MaxEventBytes), "max-event-size",
		"Largest server-sent event (or line of one) a stream may send, e.g. 4MiB; a larger one fails that request as oversized")
}

// Byte sizes a Bytes flag accepts.
const (
	minBytes = 1 << 10
	maxBytes = 1 << 30
)

// Bytes is a size in bytes, with an optional binary unit: 1048576, 512KiB, 4MiB, 1GiB (K, M,
// G and KB, MB, GB mean the same), from 1KiB to 1GiB.
func Bytes(p *int) pflag.Value {
	return value[int]{p, "size", parseBytes, FormatBytes}
}

func parseBytes(s string) (int, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	n, err := strconv.Atoi(num)
	shift, known := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}[unit]
	if err != nil || !known || n <= 0 || n > maxBytes>>shift || n<<shift < minBytes {
		return 0, errors.New("want a size from 1KiB to 1GiB, e.g. 4MiB or 1048576")
	}
	return n << shift, nil
}

// FormatBytes writes a size as Bytes reads it, in the largest unit that divides it: "1MiB".
func FormatBytes(n int) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n > 0 && n%(1<<u.shift) == 0 {
			return strconv.Itoa(n>>u.shift) + u.name
		}
	}
	return strconv.Itoa(n)
}

func parseList[T any](s, why string, parse func(string) (T, bool)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		x, ok := parse(strings.TrimSpace(f))
		if !ok {
			return nil, errors.New(why)
		}
		out = append(out, x)
	}
	return out, nil
}

func joinList[T any](xs []T, format func(T) string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = format(x)
	}
	return strings.Join(parts, ",")
}

// FormatRate writes a request rate as vllm bench serve's flags take it: "inf", "2.5".
func FormatRate(r float64) string {
	if math.IsInf(r, 1) {
		return "inf"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// simGroup marks the simulator's flags on a command that passes them on, for its help.
const simGroup = "simulator"

// AddSim gives fs the simulator's flags (vllm serve's and --sim-*) it does not have itself.
// Each use of one is checked as the simulator checks its type and appended to *to as
// "--name=value", in order; defaults replaces the default the help shows where the command
// picks its own.
func AddSim(fs *pflag.FlagSet, to *[]string, defaults map[string]string) {
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if _, own := f.Annotations[serve.OwnFlag]; own || fs.Lookup(f.Name) != nil || f.Name == "help" {
			return
		}
		g := *f
		g.Value, g.Annotations = &forward{f.Name, f.NoOptDefVal, f.Value, to}, map[string][]string{simGroup: nil}
		if d, ok := defaults[f.Name]; ok {
			g.DefValue = d
		} else if g.DefValue == "[]" {
			g.DefValue = "" // an empty list: no default worth showing
		}
		if f.Shorthand != "" && fs.ShorthandLookup(f.Shorthand) != nil {
			g.Shorthand = ""
		}
		fs.AddFlag(&g)
	})
}

// forward is a simulator flag on another command's line, passed on.
type forward struct {
	name, noOpt string
	value       pflag.Value
	to          *[]string
}

func (f *forward) Set(s string) error {
	if err := f.value.Set(s); err != nil {
		return err
	}
	if f.noOpt != "" && s == f.noOpt {
		*f.to = append(*f.to, "--"+f.name)
	} else {
		*f.to = append(*f.to, "--"+f.name+"="+s)
	}
	return nil
}

func (f *forward) String() string { return f.value.String() }
func (f *forward) Type() string   { return f.value.Type() }

// Usage is the flags' part of a command's help: its own flags, then the simulator's (AddSim's).
func Usage(fs *pflag.FlagSet) string {
	own, sim := groups(fs)
	width := termwidth.Stdout()
	out := "\nFlags:\n" + textfmt.FitFlagUsages(own.FlagUsagesWrapped(width), width)
	if sim.HasFlags() {
		out += "\n" + textfmt.Wrap("Simulator flags (vllm serve's and --sim-*, for the built-in simulator; see vllmtop help sim):", width) + "\n" +
			textfmt.FitFlagUsages(sim.FlagUsagesWrapped(width), width)
	}
	return out
}

// groups splits a command's flags into its own and the simulator's.
func groups(fs *pflag.FlagSet) (own, sim *pflag.FlagSet) {
	own, sim = pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("sim", pflag.ContinueOnError)
	own.SortFlags, sim.SortFlags = false, false
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[simGroup]; ok {
			sim.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	return own, sim
}

// Message words pflag's errors for a person: `invalid value "x" for --num-prompts`, or
// `--max-concurrency "0": want a positive integer ...` when the flag's type says why.
func Message(err error) string {
	msg := err.Error()
	var value, flag string
	if _, e := fmt.Sscanf(msg, "invalid argument %q for %q flag:", &value, &flag); e != nil {
		return textfmt.OneLine(msg, 0)
	}
	if i := strings.Index(flag, "--"); i >= 0 {
		flag = flag[i:] // "-q, --quantization" names the long flag
	}
	_, why, _ := strings.Cut(msg, " flag: ")
	switch {
	case strings.HasPrefix(why, "--"): // the flag's parser names it already
		return textfmt.OneLine(why, 0)
	case strings.HasPrefix(why, "time: "):
		// A Go duration needs its unit: 30 is not 30 seconds.
		return fmt.Sprintf("invalid value %q for %s (a duration with its unit: 30s, 5m, 1h30m)", value, flag)
	case why == "" || strings.Contains(why, "strconv."):
		return fmt.Sprintf("invalid value %q for %s", value, flag)
	}
	return fmt.Sprintf("%s %q: %s", flag, value, textfmt.OneLine(why, 0))
}

// Gather prepares a command line for pflag as vLLM's argparse reads it: the values after a flag
// of multi (one that takes several, nargs="+": --goodput ttft:200 tpot:50) become one
// argument, and vLLM's two-letter -tp is spelled --tensor-parallel-size. Arguments after --
// are left alone.
func Gather(args, multi []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-tp" || strings.HasPrefix(a, "-tp="):
			a = "--tensor-parallel-size" + strings.TrimPrefix(a, "-tp")
		}
		out = append(out, a)
		if !slices.Contains(multi, a) {
			continue
		}
		var vals []string
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			vals = append(vals, args[i+1])
			i++
		}
		out = append(out, strings.Join(vals, " "))
	}
	return out
}

// UsageError is a bad command line: its command exits with status 2 after saying Msg.
type UsageError struct{ Msg string }

func (u *UsageError) Error() string { return u.Msg }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// NoNaN refuses a NaN given to any float flag of fs that was set: every range check reads
// "x < lo || x > hi", which NaN passes, and no flag means anything by it.
func NoNaN(fs *pflag.FlagSet) error {
	var bad string
	fs.Visit(func(f *pflag.Flag) {
		if bad != "" || !strings.HasPrefix(f.Value.Type(), "float") {
			return
		}
		if strings.Contains(strings.ToLower(f.Value.String()), "nan") {
			bad = f.Name
		}
	})
	if bad != "" {
		return Usagef("argument --%s: NaN is not a number", bad)
	}
	return nil
}
