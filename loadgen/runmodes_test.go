package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listSource is a fixed list of arrivals.
type listSource struct{ list []Arrival }

func (l *listSource) Next() (Arrival, error) {
	if len(l.list) == 0 {
		return Arrival{}, io.EOF
	}
	a := l.list[0]
	l.list = l.list[1:]
	return a, nil
}

func arrivalsAt(ats ...time.Duration) *listSource {
	s := &listSource{}
	for i, at := range ats {
		s.list = append(s.list, Arrival{Index: i, At: at, Prompt: Prompt{Text: "hello", InputTokens: 3, OutputTokens: 1}})
	}
	return s
}

func byIndex(rs []Result) []Result {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Index < rs[j].Index })
	return rs
}

// A replay on the wall clock sends each arrival at its time: the intended times keep the
// trace's gaps exactly, and each send is no earlier than its time and, on this shared
// machine, within 250ms after it. NumRequests ends the trace early.
func TestRunnerReplaysArrivalsAtTheirTimes(t *testing.T) {
	c := newTestClient(t, oneTokenServer(t, 3).URL, EndpointCompletions)
	var rec Recorder
	ats := []time.Duration{0, 20 * time.Millisecond, 20 * time.Millisecond, 70 * time.Millisecond, 90 * time.Millisecond}
	r := NewRunner(c, RunnerConfig{Arrivals: arrivalsAt(ats...), NumRequests: 4, Sinks: []func(Result){rec.Add}})
	require.NoError(t, r.Run(context.Background()))
	res := byIndex(rec.Results())
	require.Len(t, res, 4, "NumRequests ends the trace")
	for i, x := range res {
		require.True(t, x.OK(), x.ErrorMessage)
		assert.Equal(t, ats[i]-ats[0], x.Intended.Sub(res[0].Intended), "request %d keeps the trace's gap", i)
		assert.False(t, x.Start.Before(x.Intended), "request %d is not sent early", i)
		assert.Less(t, x.Start.Sub(x.Intended), 250*time.Millisecond, "request %d is sent on time", i)
		assert.True(t, x.FromIntended)
	}
}

// Under a cap, an arrival that finds it full waits for a slot, keeps its intended time, and
// its wait is measured; a pause holds the schedule and it goes on after Resume.
func TestRunnerReplayCapAndPause(t *testing.T) {
	g := newGateServer(t)
	c := newTestClient(t, g.URL, EndpointCompletions)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Arrivals: arrivalsAt(0, 0, 0), MaxConcurrency: 1, Sinks: []func(Result){rec.Add}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	g.waitArrivals(t, 1)
	g.noMoreArrivals(t)
	r.Pause()
	g.release <- struct{}{} // the first ends; the paused load sends nothing more
	require.Eventually(t, func() bool { return r.Stats().Finished == 1 }, 5*time.Second, time.Millisecond)
	g.noMoreArrivals(t)
	r.Resume()
	g.waitArrivals(t, 1)
	g.noMoreArrivals(t)
	g.release <- struct{}{}
	g.waitArrivals(t, 1)
	g.release <- struct{}{}
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), g.peak.Load(), "the cap holds")
	res := byIndex(rec.Results())
	require.Len(t, res, 3)
	for _, x := range res[1:] {
		assert.Positive(t, x.QueueDelay(), "request %d waited for the slot", x.Index)
		assert.GreaterOrEqual(t, x.TTFT, x.QueueDelay(), "its TTFT counts the wait")
	}
}

// chatServer answers each chat request with the number of its messages and records them.
type chatServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]ChatMessage
}

func newChatServer(t *testing.T) *chatServer {
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []ChatMessage `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body.Messages)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"answer%d\"},\"finish_reason\":\"length\"}]}\n\n", len(body.Messages))
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// Conversations through the Runner: each turn carries the history as chat messages, with the
// answers the server gave, and results carry their turn.
func TestRunnerPlaysConversations(t *testing.T) {
	s := newChatServer(t)
	c := newTestClient(t, s.URL, EndpointChat)
	convs, err := NewSyntheticConversations(SyntheticConversationConfig{Turns: 3, InputLen: 4, OutputLen: 1, SystemLen: 2, Seed: 1}, EstimatedVocab())
	require.NoError(t, err)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Concurrency: 2, Sinks: []func(Result){rec.Add},
		Conversations: &ConversationLoad{Conversations: convs, Dialogue: DialogueConfig{Vocab: EstimatedVocab()}, Count: 4}})
	require.NoError(t, r.Run(context.Background()))
	res := rec.Results()
	require.Len(t, res, 12, "4 conversations of 3 turns")
	turns := map[int]int{}
	for _, x := range res {
		require.True(t, x.OK(), x.ErrorMessage)
		turns[x.Turn]++
	}
	assert.Equal(t, map[int]int{1: 4, 2: 4, 3: 4}, turns)
	s.mu.Lock()
	defer s.mu.Unlock()
	lens := map[int]int{}
	for _, msgs := range s.bodies {
		lens[len(msgs)]++
		assert.Equal(t, "system", msgs[0].Role)
		if len(msgs) > 2 {
			assert.Equal(t, ChatMessage{Role: "assistant", Content: "answer2"}, msgs[2], "turn 2 holds turn 1's answer as received")
		}
	}
	assert.Equal(t, map[int]int{2: 4, 4: 4, 6: 4}, lens, "system, then user and assistant per turn")
}

// NumRequests caps the turns sent across conversations.
func TestRunnerConversationsStopAtTheRequestCount(t *testing.T) {
	s := newChatServer(t)
	c := newTestClient(t, s.URL, EndpointChat)
	convs, err := NewSyntheticConversations(SyntheticConversationConfig{Turns: 5, InputLen: 4, OutputLen: 1}, EstimatedVocab())
	require.NoError(t, err)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Concurrency: 1, NumRequests: 7, Sinks: []func(Result){rec.Add},
		Conversations: &ConversationLoad{Conversations: convs, Dialogue: DialogueConfig{Vocab: EstimatedVocab()}}})
	require.NoError(t, r.Run(context.Background()))
	assert.Len(t, rec.Results(), 7)
}

// Requests of a replay that fail before any output back off, and at the threshold a headless
// run stops with the streak; the rest of the trace is not sent.
func TestRunnerReplayBacksOffAndStops(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "no key", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, EndpointCompletions)
	var rec Recorder
	ats := make([]time.Duration, 50)
	for i := range ats {
		ats[i] = time.Duration(i) * 5 * time.Millisecond
	}
	r := NewRunner(c, RunnerConfig{Arrivals: arrivalsAt(ats...), Sinks: []func(Result){rec.Add},
		Backoff: BackoffConfig{Base: time.Millisecond, Max: 2 * time.Millisecond, PauseAfter: 5, Stop: true}})
	err := r.Run(context.Background())
	var fe *FailingError
	require.ErrorAs(t, err, &fe)
	assert.GreaterOrEqual(t, len(rec.Results()), 5, "the streak's requests")
	assert.Less(t, len(rec.Results()), 50, "then the rest of the trace is not sent")
	for i, x := range byIndex(rec.Results())[1:] {
		assert.False(t, x.Start.Before(rec.Results()[0].Start.Add(time.Millisecond/2)), "request %d waited the back-off", i+1)
	}
}

// Duration stops a replay's sending: arrivals after it are not sent, and Run ends without error.
func TestRunnerReplayStopsAtItsDuration(t *testing.T) {
	g := newGateServer(t)
	close(g.release) // every request answered at once
	c := newTestClient(t, g.URL, EndpointCompletions)
	var rec Recorder
	r := NewRunner(c, RunnerConfig{Arrivals: arrivalsAt(0, 10*time.Millisecond, time.Hour), Duration: 200 * time.Millisecond, Sinks: []func(Result){rec.Add}})
	require.NoError(t, r.Run(context.Background()))
	assert.Len(t, rec.Results(), 2, "the arrival an hour in is past the duration")
}
