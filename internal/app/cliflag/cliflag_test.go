package cliflag

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vllmtop/vllmtop/loadgen"
)

// parse defines one flag of value v on a fresh flag set and parses args; the error is worded
// by Message, as the commands word it.
func parse(t *testing.T, v pflag.Value, args ...string) error {
	t.Helper()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(v, "f", "")
	if err := fs.Parse(append([]string{"--f"}, args...)); err != nil {
		return errors.New(Message(err))
	}
	return nil
}

func TestListAndUnitFlags(t *testing.T) {
	var counts []int
	require.NoError(t, parse(t, Counts(&counts), "1, 8,32"))
	assert.Equal(t, []int{1, 8, 32}, counts)
	assert.Equal(t, "1,8,32", Counts(&counts).String())
	assert.EqualError(t, parse(t, Counts(&counts), "0"), `--f "0": want a positive integer or a comma list of them`)
	assert.Error(t, parse(t, Counts(&counts), "1,,2"))
	assert.Equal(t, []int{1, 8, 32}, counts, "a bad value leaves the old one")

	rates := []float64{math.Inf(1)}
	assert.Equal(t, "inf", Rates(&rates).String(), "the default the help shows")
	require.NoError(t, parse(t, Rates(&rates), "0.5,2,inf"))
	assert.Equal(t, []float64{0.5, 2, math.Inf(1)}, rates)
	for _, bad := range []string{"-1", "0", "fast", "nan"} {
		assert.ErrorContains(t, parse(t, Rates(&rates), bad), "want requests per second", bad)
	}

	var ps []float64
	require.NoError(t, parse(t, Percentiles(&ps), "50,99.9"))
	assert.Equal(t, []float64{50, 99.9}, ps)
	assert.EqualError(t, parse(t, Percentiles(&ps), "101"), `--metric-percentiles: "101" is not a percentile in [0, 100]`)
	var ms []string
	require.NoError(t, parse(t, Metrics(&ms), "ttft,e2el"))
	assert.Equal(t, []string{"ttft", "e2el"}, ms)
	assert.ErrorContains(t, parse(t, Metrics(&ms), "speed"), "unknown metric")

	var g loadgen.Goodput
	require.NoError(t, parse(t, Goodput(&g), "ttft:200 tpot:50"))
	assert.Equal(t, loadgen.Goodput{TTFT: 200 * time.Millisecond, TPOT: 50 * time.Millisecond}, g)
	assert.ErrorContains(t, parse(t, Goodput(&g), ""), "--goodput: want objectives")
	assert.ErrorContains(t, parse(t, Goodput(&g), "latency:5"), `unknown key "latency"`)

	var fields []loadgen.Field
	require.NoError(t, parse(t, Fields(&fields), "version=0.9 tp=1"))
	assert.Equal(t, []loadgen.Field{{Key: "version", Value: "0.9"}, {Key: "tp", Value: "1"}}, fields)
	assert.EqualError(t, parse(t, Fields(&fields), "=x"), `--metadata "=x": want key=value`)

	var d time.Duration
	require.NoError(t, parse(t, Seconds(&d), "2.5"))
	assert.Equal(t, 2500*time.Millisecond, d)
	for _, bad := range []string{"-1", "inf", "NaN", "soon"} {
		assert.ErrorContains(t, parse(t, Seconds(&d), bad), "want a number of seconds >= 0", bad)
	}
}

func TestMessage(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Int("num-prompts", 1, "")
	fs.Duration("window", 0, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-prompts", "many"}, `invalid value "many" for --num-prompts`},
		{[]string{"--window", "five"}, `invalid value "five" for --window (a duration with its unit: 30s, 5m, 1h30m)`},
		{[]string{"--window", "30"}, `invalid value "30" for --window (a duration with its unit: 30s, 5m, 1h30m)`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"--num-prompts"}, "flag needs an argument: --num-prompts"},
	} {
		err := fs.Parse(c.args)
		require.Error(t, err)
		assert.Equal(t, c.want, Message(err), "%v", c.args)
	}
}

func TestAddSimPassesFlagsOn(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("model", "", "the command's own")
	var to []string
	AddSim(fs, &to, map[string]string{"sim-gpu": "L4"})
	assert.Nil(t, fs.Lookup("help"), "the simulator's --help is not the command's")
	assert.Equal(t, "L4", fs.Lookup("sim-gpu").DefValue, "the command's default is the one shown")
	assert.Equal(t, "q", fs.Lookup("quantization").Shorthand)
	require.NoError(t, fs.Parse([]string{"--sim-gpu", "A100", "--enforce-eager", "--model", "mine", "-q", "awq",
		"--gpu-memory-utilization=0.8", "--api-key", "k1,k2"}))
	assert.Equal(t, []string{"--sim-gpu=A100", "--enforce-eager", "--quantization=awq",
		"--gpu-memory-utilization=0.8", "--api-key=k1,k2"}, to)
	assert.Error(t, fs.Parse([]string{"--max-num-seqs", "lots"}), "the simulator's type check, as the flag is read")

	own, sim := groups(fs)
	assert.NotNil(t, own.Lookup("model"))
	assert.Nil(t, own.Lookup("sim-gpu"))
	assert.NotNil(t, sim.Lookup("sim-gpu"))
	u := Usage(fs)
	assert.Less(t, strings.Index(u, "--model"), strings.Index(u, "Simulator flags"))
	assert.Less(t, strings.Index(u, "Simulator flags"), strings.Index(u, "--sim-gpu"))
}

func TestGather(t *testing.T) {
	multi := []string{"--goodput", "--metadata"}
	for _, c := range []struct{ in, want []string }{
		{[]string{"--goodput", "ttft:200", "tpot:50", "--json"}, []string{"--goodput", "ttft:200 tpot:50", "--json"}},
		{[]string{"--metadata", "a=1", "b=2"}, []string{"--metadata", "a=1 b=2"}},
		{[]string{"--goodput", "--json"}, []string{"--goodput", "", "--json"}},
		{[]string{"-tp", "2", "-tp=4"}, []string{"--tensor-parallel-size", "2", "--tensor-parallel-size=4"}},
		{[]string{"--x", "--", "--goodput", "a", "b", "-tp"}, []string{"--x", "--", "--goodput", "a", "b", "-tp"}},
		{nil, []string{}},
	} {
		assert.Equal(t, c.want, Gather(c.in, multi), "%v", c.in)
	}
}

func FuzzGather(f *testing.F) {
	f.Add("--goodput ttft:200 tpot:50 -- --goodput x", "--goodput")
	f.Add("-tp 2 --metadata a=1 b", "--metadata")
	f.Fuzz(func(t *testing.T, line, flag string) {
		args := strings.Split(line, " ")
		out := Gather(args, []string{flag})
		// Everything after the first -- is passed on unchanged.
		if i := slices.Index(args, "--"); i >= 0 {
			j := slices.Index(out, "--")
			if j < 0 || !slices.Equal(args[i:], out[j:]) {
				t.Fatalf("%q: the arguments after -- changed: %q", args, out)
			}
		}
		if len(out) > 2*len(args) {
			t.Fatalf("%q grew to %q", args, out)
		}
	})
}

func TestBytes(t *testing.T) {
	n := 1 << 20
	assert.Equal(t, "1MiB", Bytes(&n).String(), "the default the help shows")
	for in, want := range map[string]int{"4MiB": 4 << 20, "512k": 512 << 10, "1048577": 1048577, "2 GB": 0, "1G": 1 << 30, "64KiB": 64 << 10} {
		if want == 0 {
			assert.Error(t, parse(t, Bytes(&n), in), in)
			continue
		}
		require.NoError(t, parse(t, Bytes(&n), in), in)
		assert.Equal(t, want, n, in)
	}
	for _, bad := range []string{"0", "-1", "1.5MiB", "MiB", "512", "2GiB", "4TB", "lots"} {
		assert.ErrorContains(t, parse(t, Bytes(&n), bad), "want a size from 1KiB to 1GiB", bad)
	}
	assert.Equal(t, "1048577", FormatBytes(1048577))
}

func TestNoNaN(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Float64("ratio", 0, "")
	fs.Float64Slice("rates", nil, "")
	fs.String("name", "", "")
	if err := fs.Parse([]string{"--ratio", "0.5", "--name", "nan", "--rates", "1,inf"}); err != nil {
		t.Fatal(err)
	}
	if err := NoNaN(fs); err != nil {
		t.Errorf("no NaN given: %v", err)
	}
	for _, args := range [][]string{{"--ratio", "NaN"}, {"--rates", "1,nan"}} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.Float64("ratio", 0, "")
		fs.Float64Slice("rates", nil, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		err := NoNaN(fs)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "NaN is not a number") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
