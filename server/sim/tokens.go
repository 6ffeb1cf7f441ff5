package sim

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The simulator's tokenizer is approximate but deterministic, so counts are stable across runs
// and close to a real BPE tokenizer's for English text (about 0.75 words per token):
//
//   - a word is a run of letters with the space before it; it is one token per 6 letters
//     (rounded up), so common words are one token and long ones two or three;
//   - digits go in groups of up to 3, one token each;
//   - every other character (punctuation, symbols, a newline, a space not before a word) is one
//     token.
//
// Token ids are a hash of the piece's text, so equal text gives equal ids (which prefix caching
// relies on). Ids below wordBase are never produced by Tokenize; generated output uses the
// built-in word list at ids wordBase+i, which Detokenize renders back.

const wordBase = 1000

// Tokenize splits text into the simulator's tokens.
func Tokenize(text string) []int {
	ids := make([]int, 0, len(text)/4+1)
	eachPiece(text, func(piece string) { ids = append(ids, pieceID(piece)) })
	return ids
}

// CountTokens is len(Tokenize(text)) without the allocation.
func CountTokens(text string) int {
	n := 0
	eachPiece(text, func(string) { n++ })
	return n
}

// TokenStrings returns the text of each token of Tokenize(text).
func TokenStrings(text string) []string {
	var out []string
	eachPiece(text, func(piece string) { out = append(out, piece) })
	return out
}

func eachPiece(text string, emit func(string)) {
	i := 0
	for i < len(text) {
		start := i
		r, _ := utf8.DecodeRuneInString(text[i:])
		// A space joins the word or number that follows it.
		if r == ' ' && i+1 < len(text) {
			next, _ := utf8.DecodeRuneInString(text[i+1:])
			if unicode.IsLetter(next) || unicode.IsDigit(next) {
				i++
				r = next
			}
		}
		switch {
		case unicode.IsLetter(r):
			i = emitRun(text, start, i, unicode.IsLetter, 6, emit)
		case unicode.IsDigit(r):
			i = emitRun(text, start, i, unicode.IsDigit, 3, emit)
		default:
			_, sz := utf8.DecodeRuneInString(text[i:])
			i += sz
			emit(text[start:i])
		}
	}
}

// emitRun emits the run of runes matching in from i (the piece began at start, which may be
// a leading space) in pieces of at most limit runes, and returns where the run ends.
func emitRun(text string, start, i int, in func(rune) bool, limit int, emit func(string)) int {
	n := 0
	for i < len(text) {
		c, sz := utf8.DecodeRuneInString(text[i:])
		if !in(c) {
			break
		}
		if n == limit {
			emit(text[start:i])
			start, n = i, 0
		}
		n++
		i += sz
	}
	emit(text[start:i])
	return i
}

// pieceID hashes a piece (FNV-1a) into the id space above the built-in words.
func pieceID(piece string) int {
	h := uint32(2166136261)
	for i := 0; i < len(piece); i++ {
		h ^= uint32(piece[i])
		h *= 16777619
	}
	return wordBase + len(outputWords) + int(h%100000)
}

// Detokenize renders token ids as text. Ids of generated words render as those words; other
// ids (hashed prompt pieces cannot be inverted) render as " <id>" placeholders.
func Detokenize(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(TokenText(id))
	}
	return b.String()
}

// TokenText is the text of one token id.
func TokenText(id int) string {
	if id >= wordBase && id < wordBase+len(outputWords) {
		return outputWords[id-wordBase]
	}
	return " <" + itoa(id) + ">"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}

// outputWords is the vocabulary of generated text: one token each, a leading space on words.
var outputWords = strings.Fields(`the of and to in is that for it as with was on be by this are from at
or an have which not but all they their has more one can will there been would its were
when also into other time some these may only first new than use over such most any model
data system each two used what many like then them where well out about after way because
through between both make while memory cache token batch request server latency throughput
prefill decode engine block queue schedule kernel layer attention weights memory bandwidth
compute step load serve stream first every second minute value number small large fast slow
high low more less under above steady again still just very much even here today`)

func init() {
	for i, w := range outputWords {
		outputWords[i] = " " + w
	}
	// Punctuation gives the text a sentence shape.
	outputWords = append(outputWords, ".", ",", ".\n")
}

// OutputToken is the id of the i-th word the engine generates from (i taken modulo the
// list), for callers that need plausible alternatives to a generated token.
func OutputToken(i int) int {
	n := len(outputWords)
	return wordBase + ((i%n)+n)%n
}
