package serve

import (
	"context"
	"math"
	"sync"

	"github.com/vllmtop/vllmtop/server/sim"
	"github.com/vllmtop/vllmtop/server/sim/metrics"
	"github.com/vllmtop/vllmtop/server/sim/vlog"
)

// Data parallelism (--data-parallel-size N): N engines behind the one API server, each on
// its own GPUs (tensor parallelism inside a rank), so each has the whole KV cache one rank's
// GPUs hold, and its own queue, scheduler and step clock. The API server routes every engine
// request to one of them as vLLM's DPLBAsyncMPClient does (docs/vllm-behaviour.md#data-parallel-load-balancing).

// startEngines builds the server's engines, their metrics and their stats lines.
func (s *Server) startEngines(clock sim.Clock) {
	n := max(1, s.opts.DataParallelSize)
	logStats := !s.opts.DisableLogStats
	x := s.opts.Metrics
	speed := 1.0
	if sc, ok := clock.(*scaledClock); ok {
		speed = sc.speed // durations and rates in wall-clock time, as clients see them
	}
	x.Speed = speed
	s.metrics = metrics.NewEnginesWithExtras(s.setup, s.modelName, logStats, n, x)
	if s.opts.EnableLoRA {
		s.metrics.ObserveLoRA(nil, nil)
	}
	s.lb = newBalancer(n)
	s.drvs = make([]*driver, n)
	for i := range s.drvs {
		d := newDriver(sim.NewEngine(s.setup), clock)
		d.observers = append(d.observers, s.metrics.Engine(i), lbObserver{s.lb, i})
		if s.opts.EnableLoRA {
			d.observers = append(d.observers, loraObserver{d, s.metrics})
		}
		if s.logs != nil && logStats {
			st := vlog.NewEngineStats(s.logs, statsInterval, i)
			st.SetSpeed(speed)
			d.observers = append(d.observers, statsObserver{st})
			d.tick = st.Tick
		}
		s.drvs[i] = d
	}
	s.drv = s.drvs[0]
}

// runDrivers runs every engine's driver until ctx ends; the channel closes when all returned.
func (s *Server) runDrivers(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	for _, d := range s.drvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.run(ctx)
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// submit routes one engine request to an engine and queues it there.
func (s *Server) submit(r sim.Request, st *stream) error {
	i := s.lb.pick()
	if err := s.drvs[i].submit(r, st); err != nil {
		s.lb.cancel(i)
		return err
	}
	return nil
}

// balancer is DPLBAsyncMPClient's engine choice for one API server (client_count 1). Each
// engine's waiting and running counts and KV-cache usage are its scheduler's last published
// ones (vLLM's coordinator forwards them every 100 ms; here every step), raised by one
// waiting request for each request routed to it since; inflight is the exact count of the
// requests routed to it that have not finished.
type balancer struct {
	mu       sync.Mutex
	loads    []engineLoad
	inflight []int
	start    int // where the next scan starts: rotated after every choice so ties spread
}

type engineLoad struct {
	waiting, running int
	kvUsage          float64
}

func newBalancer(n int) *balancer {
	return &balancer{loads: make([]engineLoad, n), inflight: make([]int, n)}
}

// pick chooses the engine for a new request: the least score, scanning from start, where the
// score is the larger of the in-flight count and waiting+running, plus, when requests wait,
// a penalty for KV pressure rising from 0 at 50% usage to 3 times the waiting count at 100%.
func (b *balancer) pick() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.loads)
	best, bestScore := 0, math.Inf(1)
	for k := range n {
		i := (b.start + k) % n
		l := b.loads[i]
		score := float64(max(b.inflight[i], l.waiting+l.running))
		if l.waiting > 0 {
			score += float64(l.waiting) * 6 * max(0, l.kvUsage-0.5)
		}
		if score < bestScore {
			best, bestScore = i, score
		}
	}
	b.loads[best].waiting++
	b.inflight[best]++
	b.start = (b.start + 1) % n
	return best
}

// cancel undoes pick's count for a request the engine refused.
func (b *balancer) cancel(i int) { b.end(i) }

func (b *balancer) end(i int) {
	b.mu.Lock()
	b.inflight[i] = max(0, b.inflight[i]-1)
	b.mu.Unlock()
}

func (b *balancer) publish(i int, l engineLoad) {
	b.mu.Lock()
	b.loads[i] = l
	b.mu.Unlock()
}

// lbObserver publishes engine i's scheduler state to the balancer after each step and
// counts its finished requests.
type lbObserver struct {
	b *balancer
	i int
}

func (o lbObserver) ObserveStep(r *sim.StepResult) {
	o.b.publish(o.i, engineLoad{waiting: r.Waiting, running: r.Running, kvUsage: r.KVCacheUsage()})
}

func (o lbObserver) ObserveEnded(*sim.Sequence) { o.b.end(o.i) }
