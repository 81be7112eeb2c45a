package agent

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/augceo/agent/jsonstream"
)

// Output is a piece of a solution's output as the model writes it, so
// that a reader, a chat UI, can show the answer before it is complete. A
// null output (a loop step that is not done) yields none.
type Output struct {
	Index int // the solution
	// JSON continues the output value as the model writes it: partial
	// JSON, whose pieces join into the whole value.
	JSON string
	// Text continues the output when it is a JSON string: the text the
	// piece adds, its escapes decoded. It is "" for any other output, and
	// when the piece ends inside an escape (the next piece carries it).
	Text string
}

// outputTap follows the output of one solution as it streams.
type outputTap struct {
	x       *jsonstream.Extractor
	sent    int // bytes of the value handed over as JSON
	decoded int // bytes of a string value handed over as Text
	done    bool
}

func newOutputTap() *outputTap {
	x, _ := jsonstream.NewValueExtractor("output") // a valid path
	return &outputTap{x: x}
}

// feed scans the next piece of the solution's text and returns the
// output it adds, if any.
func (t *outputTap) feed(index int, p []byte) *Output {
	if t.done || t.x == nil {
		return nil
	}
	els, err := t.x.Feed(p)
	if err != nil {
		t.x = nil // the solution is not JSON: validation reports it
		return nil
	}
	v := t.x.Partial()
	if len(els) > 0 {
		v, t.done = els[0].Value, true
	}
	if len(v) <= t.sent || v[0] == 'n' {
		return nil
	}
	out := &Output{Index: index, JSON: string(v[t.sent:])}
	t.sent = len(v)
	if v[0] == '"' {
		t.decoded = max(t.decoded, 1) // past the opening quote
		end := len(v) - 1             // before the closing quote
		if !t.done {
			end = t.decoded + decodable(v[t.decoded:])
		}
		if end > t.decoded {
			var s string
			if json.Unmarshal([]byte(`"`+string(v[t.decoded:end])+`"`), &s) == nil {
				out.Text = s
			}
			t.decoded = end
		}
	}
	return out
}

// decodable returns how many bytes at the start of raw, a part of a JSON
// string's body as it streams, end on a whole character: not inside an
// escape, a surrogate pair or a UTF-8 sequence.
func decodable(raw []byte) int {
	n := 0
	for n < len(raw) {
		c := raw[n]
		switch {
		case c == '\\':
			w := escapeLen(raw[n:])
			if w == 0 {
				return n
			}
			n += w
		case c < utf8.RuneSelf:
			n++
		default:
			if !utf8.FullRune(raw[n:]) {
				return n
			}
			_, w := utf8.DecodeRune(raw[n:])
			n += w
		}
	}
	return n
}

// escapeLen returns the length of the escape that starts raw, or 0 when
// raw ends before it does. A high surrogate waits for its low half.
func escapeLen(raw []byte) int {
	if len(raw) < 2 {
		return 0
	}
	if raw[1] != 'u' {
		return 2
	}
	if len(raw) < 6 {
		return 0
	}
	if r := hex4(raw[2:6]); r < 0xD800 || r > 0xDBFF {
		return 6
	}
	// A high surrogate: a following \u escape may be its low half.
	switch {
	case len(raw) < 8:
		return 0
	case raw[6] != '\\' || raw[7] != 'u':
		return 6
	case len(raw) < 12:
		return 0
	}
	return 12
}

// hex4 reads four hex digits; -1 if they are not.
func hex4(b []byte) int {
	r := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}
