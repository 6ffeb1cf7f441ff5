package server

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStateAndReasonNames(t *testing.T) {
	for st := Idle; st <= Exited; st++ {
		assert.NotContains(t, st.String(), "State(", "state %d has a name", int(st))
	}
	assert.Equal(t, "State(99)", State(99).String())
	assert.True(t, Ready.Running())
	assert.False(t, Exited.Running())
	for r := ReasonUnknown; r <= EngineDead; r++ {
		assert.NotContains(t, r.String(), "FatalReason(", "reason %d has a name", int(r))
	}
	assert.False(t, EngineFailed.RootCause())
	assert.True(t, KVCacheNoMemory.RootCause())
}

func TestExitStatusString(t *testing.T) {
	tests := []struct {
		st   ExitStatus
		want string
	}{
		{ExitStatus{Code: 0, Requested: true}, "exit status 0"},
		{ExitStatus{Code: 1, Cause: "ValueError: No available memory for the cache blocks.", Reason: KVCacheNoMemory},
			"exit status 1: ValueError: No available memory for the cache blocks."},
		{ExitStatus{Code: -1, Signal: syscall.SIGKILL, Killed: true, Requested: true}, "terminated by signal: killed"},
		{ExitStatus{Code: -1, Err: errors.New("exec: \"vllm\": executable file not found in $PATH")},
			"did not start: exec: \"vllm\": executable file not found in $PATH"},
		{ExitStatus{Code: -1, Requested: true}, "stopped"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.st.String())
	}
	assert.False(t, ExitStatus{Requested: true}.Failed())
	assert.True(t, ExitStatus{Code: 0}.Failed(), "an exit nobody asked for is a failure")
	assert.True(t, ExitStatus{Requested: true, Reason: CUDAOutOfMemory}.Failed())
}

func TestOutcomeIsTheServersFate(t *testing.T) {
	assert.NoError(t, Status{State: Ready}.Outcome(), "still running: vllmtop stops it now")
	assert.NoError(t, Status{State: Exited, Exit: ExitStatus{Requested: true, Code: 0}}.Outcome())
	assert.NoError(t, Status{State: Exited, Exit: ExitStatus{Requested: true, Code: 1, Reason: ReasonUnknown + 1}}.Outcome(),
		"a stop vllmtop asked for is a stop, whatever the server printed on its way out")
	assert.EqualError(t, Status{State: Exited, Exit: ExitStatus{Code: 3, Cause: "RuntimeError: boom"}}.Outcome(),
		"the server exited: exit status 3: RuntimeError: boom")
	assert.EqualError(t, Status{State: Exited, Exit: ExitStatus{Code: -1, Signal: syscall.SIGSEGV}}.Outcome(),
		"the server died: terminated by signal: segmentation fault")
	assert.EqualError(t, Status{State: Exited, Exit: ExitStatus{Code: 0}}.Outcome(),
		"the server exited: exit status 0", "a server that ends by itself is the end of the dashboard's job")
}
