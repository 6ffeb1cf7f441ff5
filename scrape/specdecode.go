package scrape

// Speculative decoding, as vLLM's SpecDecodingProm docstring defines its two figures:
//
//	acceptance rate        = accepted tokens ÷ draft tokens
//	mean acceptance length = 1 + accepted tokens ÷ drafts   (the bonus token counted)
//
// Both are absent without the vllm:spec_decode_* counters (speculative decoding off) or when
// no draft was verified.

// SpecDecodeAcceptanceRate is the acceptance rate since the server started (0..1).
func (s *Stats) SpecDecodeAcceptanceRate() Value {
	return specRatio(Some(0), s.SpecDecodeAcceptedTokens, Some(0), s.SpecDecodeDraftTokens)
}

// SpecDecodeMeanAcceptanceLength is the mean acceptance length since the server started.
func (s *Stats) SpecDecodeMeanAcceptanceLength() Value {
	return plusOne(specRatio(Some(0), s.SpecDecodeAcceptedTokens, Some(0), s.SpecDecodeDrafts))
}

// SpecDecodeMeanAcceptanceLength is the mean acceptance length over the window from p to c.
func SpecDecodeMeanAcceptanceLength(p, c *Stats) Value {
	return plusOne(specRatio(p.SpecDecodeAcceptedTokens, c.SpecDecodeAcceptedTokens, p.SpecDecodeDrafts, c.SpecDecodeDrafts))
}

// specDecodeTotal is the mean acceptance length of several engines' summed increases.
func specDecodeTotal(prevs, curs []*Stats) Value {
	var accepted, drafts float64
	for i := range curs {
		a, ok1 := increase(prevs[i].SpecDecodeAcceptedTokens, curs[i].SpecDecodeAcceptedTokens)
		d, ok2 := increase(prevs[i].SpecDecodeDrafts, curs[i].SpecDecodeDrafts)
		if !ok1 || !ok2 {
			return Value{}
		}
		accepted, drafts = accepted+a, drafts+d
	}
	return plusOne(specRatio(Some(0), Some(accepted), Some(0), Some(drafts)))
}

// specRatio is an increase over another, absent when either is unknown or nothing was
// drafted; unlike ratio it is not capped at 1 (a draft accepts up to k tokens).
func specRatio(prevNum, curNum, prevDen, curDen Value) Value {
	dn, ok1 := increase(prevNum, curNum)
	dd, ok2 := increase(prevDen, curDen)
	if !ok1 || !ok2 || !(dd > 0) {
		return Value{}
	}
	return Some(dn / dd)
}

func plusOne(v Value) Value {
	if !v.OK {
		return v
	}
	return Some(1 + v.V)
}
