package sim

// Tensor parallelism all-reduces each layer's output twice (after the attention output
// projection and after the MLP's down projection), over NVLink or PCIe between the GPUs of
// the group (docs/calibration.md#tensor-parallel-all-reduce).

// allReduceBusEfficiency is the fraction of a link's per-direction bandwidth an all-reduce
// reaches on large messages, as nccl-tests report its bus bandwidth.
const allReduceBusEfficiency = 0.8

// allReduce is the cost of a step's all-reduces: a fixed latency per all-reduce and the
// activation bytes moved, per token.
type allReduce struct {
	perStep  float64 // latency x all-reduces per step, seconds
	perToken float64 // seconds per token of the step
}

// newAllReduce is the all-reduce cost of a setup; zero without tensor parallelism or where
// the GPU profile gives no interconnect.
func newAllReduce(g GPU, m Model, tp int, activationBytes float64) allReduce {
	if tp <= 1 || g.InterconnectGBps <= 0 {
		return allReduce{}
	}
	n := float64(tp)
	calls := 2 * float64(m.NumLayers)
	// A ring (or vLLM's one-shot custom kernel on two GPUs) sends 2(n-1)/n of the message
	// out of each GPU.
	moved := 2 * (n - 1) / n * float64(m.HiddenSize) * activationBytes
	return allReduce{
		perStep:  calls * g.AllReduceUS * 1e-6,
		perToken: calls * moved / (allReduceBusEfficiency * g.InterconnectGBps * 1e9),
	}
}

// seconds is the all-reduce time of a step computing tokens tokens.
func (a allReduce) seconds(tokens float64) float64 {
	if tokens == 0 {
		return 0
	}
	return a.perStep + a.perToken*tokens
}
