package sim

import (
	"math"
	"testing"
)

// A tensor-parallel step pays two all-reduces per layer: at decode their fixed cost, at
// prefill the activations over the link, so PCIe costs far more than NVLink.
func TestAllReduceByInterconnect(t *testing.T) {
	step := func(gpu string, tp int, batch []Work) float64 {
		t.Helper()
		return NewStepModel(mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: gpu, TensorParallelSize: tp})).GPUSeconds(batch)
	}
	s := mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "H100-SXM-80GB", TensorParallelSize: 2})
	m, g := s.ModelProfile, s.GPUProfile
	calls := 2 * float64(m.NumLayers)

	decode := []Work{{Q: 1, C: 512}}
	if got := NewStepModel(s).allReduce.seconds(1); math.Abs(got-calls*(g.AllReduceUS*1e-6+float64(m.HiddenSize)*2/(0.8*g.InterconnectGBps*1e9))) > 1e-12 {
		t.Fatalf("one token's all-reduces take %v s", got)
	}
	prefill := []Work{{Q: 2048}}
	// 2048 tokens x 3584 x 2 bytes over 0.8 x 32 GB/s, 56 times: about 32 ms on PCIe.
	pcie := step("A100-PCIe-80GB", 2, prefill) - withoutAllReduce(t, "A100-PCIe-80GB", prefill)
	nvlink := step("A100-SXM-80GB", 2, prefill) - withoutAllReduce(t, "A100-SXM-80GB", prefill)
	if pcie < 0.025 || pcie > 0.040 || nvlink > pcie/5 {
		t.Fatalf("2048-token prefill all-reduces: PCIe %.4f s, NVLink %.4f s", pcie, nvlink)
	}
	if step("H100-SXM-80GB", 2, decode) <= withoutAllReduce(t, "H100-SXM-80GB", decode) {
		t.Fatal("a TP2 decode step costs no communication")
	}
	if got := NewStepModel(mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: "H100-SXM-80GB"})).allReduce; got != (allReduce{}) {
		t.Fatalf("TP1 has all-reduce cost %+v", got)
	}
}

// withoutAllReduce is the TP2 step on gpu with its all-reduce term removed.
func withoutAllReduce(t *testing.T, gpu string, batch []Work) float64 {
	t.Helper()
	sm := NewStepModel(mustResolve(t, Config{Model: "Qwen/Qwen2.5-7B-Instruct", GPU: gpu, TensorParallelSize: 2}))
	sm.allReduce = allReduce{}
	return sm.GPUSeconds(batch)
}

func mustResolve(t *testing.T, c Config) *Setup {
	t.Helper()
	s, err := Resolve(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
