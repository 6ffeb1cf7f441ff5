package sim

import "fmt"

// ValidationError is a value vLLM's config classes reject: they are pydantic dataclasses,
// so a flag out of a field's range (gpu_memory_utilization gt=0 le=1, block_size gt=0,
// tensor_parallel_size ge=1, max_num_batched_tokens ge=1, ...) fails with pydantic's message
// when `vllm serve` builds the engine config.
type ValidationError struct {
	Class string // the config class, e.g. "CacheConfig"
	Field string // e.g. "gpu_memory_utilization"
	// Constraint is pydantic's error type: "greater_than", "greater_than_equal" or
	// "less_than_equal"; Bound its limit as pydantic prints it.
	Constraint string
	Bound      string
	Input      any // the value given: a float64 or an int
	// Message is a model validator's ValueError (Constraint "value_error"): pydantic prints
	// it with the class's whole ArgsKwargs as the input, shortened as pydantic shortens it.
	Message string
	// Model and GPU are the server refused, where the refusal came after they were known.
	Model, GPU string
}

// valueError is pydantic's error type for a ValueError raised by a validator.
const valueError = "value_error"

var constraintWords = map[string]string{
	"greater_than":       "greater than",
	"greater_than_equal": "greater than or equal to",
	"less_than_equal":    "less than or equal to",
}

// Error is pydantic's str(ValidationError).
func (e *ValidationError) Error() string {
	if e.Constraint == valueError {
		return fmt.Sprintf("1 validation error for %s\n  Value error, %s [type=value_error, input_value=%v, input_type=ArgsKwargs]\n    For further information visit https://errors.pydantic.dev/2.12/v/value_error",
			e.Class, e.Message, e.Input)
	}
	input, typ := fmt.Sprint(e.Input), "int"
	if f, ok := e.Input.(float64); ok {
		input, typ = PyFloat(f), "float"
	}
	return fmt.Sprintf("1 validation error for %s\n%s\n  Input should be %s %s [type=%s, input_value=%s, input_type=%s]\n    For further information visit https://errors.pydantic.dev/2.12/v/%s",
		e.Class, e.Field, constraintWords[e.Constraint], e.Bound, e.Constraint, input, typ, e.Constraint)
}

// Short is the violation in one line, for output of our own (not an imitated vLLM log).
func (e *ValidationError) Short() string {
	if e.Constraint == valueError {
		return e.Message
	}
	input := fmt.Sprint(e.Input)
	if f, ok := e.Input.(float64); ok {
		input = PyFloat(f)
	}
	return fmt.Sprintf("%s must be %s %s, got %s", e.Field, constraintWords[e.Constraint], e.Bound, input)
}

// ValidateRanges applies the field constraints of vLLM's config classes to the values of cfg
// a user set explicitly (set reports whether a flag was given), and returns the first
// violation. Unset values take defaults and are not checked here.
func ValidateRanges(cfg Config, set func(flag string) bool) error {
	checks := []struct {
		flag string
		bad  bool
		err  ValidationError
	}{
		{"gpu-memory-utilization", !(cfg.GPUMemoryUtilization > 0), ValidationError{Class: "CacheConfig", Field: "gpu_memory_utilization", Constraint: "greater_than", Bound: "0", Input: cfg.GPUMemoryUtilization}},
		{"gpu-memory-utilization", cfg.GPUMemoryUtilization > 1, ValidationError{Class: "CacheConfig", Field: "gpu_memory_utilization", Constraint: "less_than_equal", Bound: "1", Input: cfg.GPUMemoryUtilization}},
		{"block-size", cfg.BlockSize <= 0, ValidationError{Class: "CacheConfig", Field: "block_size", Constraint: "greater_than", Bound: "0", Input: cfg.BlockSize}},
		{"tensor-parallel-size", cfg.TensorParallelSize < 1, ValidationError{Class: "ParallelConfig", Field: "tensor_parallel_size", Constraint: "greater_than_equal", Bound: "1", Input: cfg.TensorParallelSize}},
		{"max-num-batched-tokens", cfg.MaxNumBatchedTokens < 1, ValidationError{Class: "SchedulerConfig", Field: "max_num_batched_tokens", Constraint: "greater_than_equal", Bound: "1", Input: cfg.MaxNumBatchedTokens}},
		{"max-num-seqs", cfg.MaxNumSeqs < 1, ValidationError{Class: "SchedulerConfig", Field: "max_num_seqs", Constraint: "greater_than_equal", Bound: "1", Input: cfg.MaxNumSeqs}},
	}
	for _, c := range checks {
		if set(c.flag) && c.bad {
			err := c.err
			return &err
		}
	}
	return nil
}
