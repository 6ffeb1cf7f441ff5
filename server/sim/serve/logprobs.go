package serve

import (
	"math"
	"strconv"

	"github.com/vllmtop/vllmtop/server/sim"
)

// The simulator has no logits, so logprobs are made up, but with the shape and the properties
// of real ones, and reproducibly (the same request id, choice and position give the same
// numbers): the sampled token is the most likely one, its log probability is between -1.3
// and -0.05, and the top alternatives are distinct words with strictly lower, decreasing log
// probabilities.

// tokenLogprobs is one position: the sampled token and its top alternatives.
type tokenLogprobs struct {
	none    bool // no logprob: the first token of an echoed prompt
	text    string
	logprob float64
	top     []alternative // sorted by logprob, descending; top[0] is the sampled token
}

type alternative struct {
	text    string
	logprob float64
}

// logprobsAt makes position pos of a choice (seed identifies the request and choice): k
// alternatives (the sampled one included when k > 0).
func logprobsAt(seed uint64, pos, token, k int) tokenLogprobs {
	h := mix(seed ^ uint64(pos)*0x9E3779B97F4A7C15)
	u := float64(h>>11) / (1 << 53)
	lp := -0.05 - 1.25*u*u
	out := tokenLogprobs{text: sim.TokenText(token), logprob: lp}
	if k <= 0 {
		return out
	}
	out.top = append(out.top, alternative{out.text, lp})
	seen := map[string]bool{out.text: true}
	alt := lp
	for i := 1; len(out.top) < k && i < 4*k+8; i++ {
		h = mix(h + uint64(i))
		text := sim.TokenText(sim.OutputToken(int(h % 4096)))
		if seen[text] {
			continue
		}
		seen[text] = true
		alt -= 0.3 + 2*float64(h>>40)/(1<<24)
		out.top = append(out.top, alternative{text, alt})
	}
	return out
}

func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// seedOf is a choice's logprob seed, from the response id and the choice index.
func seedOf(id string, choice int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return mix(h ^ uint64(choice))
}

// appendFloat writes a logprob as Python's json does (repr of the float).
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, -1) {
		return append(b, "-Infinity"...)
	}
	return append(b, sim.PyFloat(f)...)
}

// appendBytes writes the UTF-8 bytes of s as a JSON list of ints (chat logprobs' "bytes").
func appendBytes(b []byte, s string) []byte {
	b = append(b, '[')
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(s[i]), 10)
	}
	return append(b, ']')
}

// appendChatLogprobs writes a chat choice's logprobs object for entries: {"content":[{token,
// logprob, bytes, top_logprobs:[...]}]}, as vLLM's ChatCompletionLogProbs.
func appendChatLogprobs(b []byte, entries []tokenLogprobs) []byte {
	b = append(b, `{"content":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendChatToken(b, e.text, e.logprob)
		b = append(b, `,"top_logprobs":[`...)
		for j, a := range e.top {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(appendChatToken(b, a.text, a.logprob), '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// appendChatToken writes the fields a chat logprob entry and its alternatives share, leaving
// the object open: {"token":...,"logprob":...,"bytes":[...]
func appendChatToken(b []byte, text string, logprob float64) []byte {
	b = append(b, `{"token":`...)
	b = appendJSONString(b, text)
	b = append(b, `,"logprob":`...)
	b = appendFloat(b, logprob)
	b = append(b, `,"bytes":`...)
	return appendBytes(b, text)
}

// appendLogprobList appends item of each entry, comma-separated, and null for an entry
// without a logprob (the first echoed prompt token).
func appendLogprobList(b []byte, entries []*tokenLogprobs, item func([]byte, *tokenLogprobs) []byte) []byte {
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		if e.none {
			b = append(b, "null"...)
			continue
		}
		b = item(b, e)
	}
	return b
}

// appendTopLogprobs writes a completion token's top-logprob dict {text: logprob, ...}.
func appendTopLogprobs(b []byte, e *tokenLogprobs) []byte {
	b = append(b, '{')
	top := e.top
	if len(top) == 0 {
		top = []alternative{{e.text, e.logprob}} // logprobs=0: the sampled token alone
	}
	for j, a := range top {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, a.text)
		b = append(b, ':')
		b = appendFloat(b, a.logprob)
	}
	return append(b, '}')
}

// appendCompletionLogprobs writes a completion choice's logprobs object: parallel lists of
// text offsets, token logprobs, tokens and top-logprob dicts (CompletionLogProbs). A nil
// entry (the first echoed prompt token, which has no logprob) renders as null.
func appendCompletionLogprobs(b []byte, entries []*tokenLogprobs, offset int) []byte {
	b = append(b, `{"text_offset":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(offset), 10)
		offset += len(e.text)
	}
	b = append(b, `],"token_logprobs":[`...)
	b = appendLogprobList(b, entries, func(b []byte, e *tokenLogprobs) []byte { return appendFloat(b, e.logprob) })
	b = append(b, `],"tokens":[`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, e.text)
	}
	b = append(b, `],"top_logprobs":[`...)
	b = appendLogprobList(b, entries, appendTopLogprobs)
	return append(b, "]}"...)
}
