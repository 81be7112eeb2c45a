package jsonstream

import (
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
)

// Element is a value handed over by an [Extractor]: an element of the array
// at the extraction path, or the value at that path when it is not an array.
// Its Path and Value are its own: they share no memory with the input or
// with any other Element, and the Extractor never touches them again.
type Element struct {
	// Index is the position of the element in the array at the extraction
	// path, or -1 when the value at the path is not an array and Value is
	// that whole value.
	Index int
	// Path is the dot path of the element, such as "calls.2", or the
	// extraction path itself when Index is -1.
	Path string
	// Value holds the bytes of the element exactly as they appear in the
	// input (inner white space included). It is a copy that the caller
	// owns and may keep or modify.
	Value json.RawMessage
}

// Extractor hands over the elements of the array at a dot path of a JSON
// value that arrives in chunks, each as soon as its last byte has been fed.
// Push each chunk with [Extractor.Feed], which returns the elements it
// completed, and call [Extractor.End] when the input has ended.
//
// A path such as "calls" or "output.items" names a value: each segment is
// an object key, or, in an array, a decimal index ("calls.0.args"); a
// key cannot contain '.'; "" is the root value. If the value at the path is
// an array, each of its elements is handed over; if it is any other value,
// that value is handed over once, with Index -1; if the path is absent,
// nothing is. Keys compare after decoding, as encoding/json compares map
// keys. When an object repeats a key on the path, every occurrence is
// handed over: a stream cannot know that a later duplicate will replace an
// earlier one, as it does in encoding/json.
//
// The whole input is validated. Elements completed before a syntax error
// have already been handed over when the error is reported. The Extractor
// keeps only the bytes of the element being captured, the keys of the
// open objects and a few words of state per open container.
// It is not safe for concurrent use.
type Extractor struct {
	s       scanner
	path    string
	segs    []string
	idx     []int // idx[i] is segs[i] as an array index, or -1
	off     int64 // bytes fed so far
	pending bool  // the scanner is inside a token that began in an earlier chunk

	capturing bool
	capDepth  int    // stack depth at which the captured value began
	capIndex  int    // its Element.Index
	from      int    // start in the current chunk of the captured bytes
	buf       []byte // captured bytes from earlier chunks

	whole bool // hand over the value at the path whole, even an array

	ended bool
	err   error
}

// NewExtractor returns an Extractor for the value at path. It returns an
// error wrapping [ErrInvalidPath] if a segment of path is empty.
func NewExtractor(path string) (*Extractor, error) {
	x := &Extractor{path: path}
	if path == "" {
		return x, nil
	}
	x.segs = strings.Split(path, ".")
	x.idx = make([]int, len(x.segs))
	for i, seg := range x.segs {
		if seg == "" {
			return nil, fmt.Errorf("%w %q: empty segment", ErrInvalidPath, path)
		}
		x.idx[i] = index(seg)
	}
	return x, nil
}

// NewValueExtractor returns an Extractor that hands over the value at
// path whole, as one Element with Index -1, even when it is an array;
// [Extractor.Partial] shows it as it arrives. This is how a solution's
// output is streamed to a reader while the model writes it.
func NewValueExtractor(path string) (*Extractor, error) {
	x, err := NewExtractor(path)
	if err == nil {
		x.whole = true
	}
	return x, err
}

// Partial returns the bytes of the value being captured that have been
// fed so far, when the last Feed began a value at the path (or an
// element of its array) without completing it; otherwise nil. The bytes
// are the Extractor's: they are valid until the next Feed, and the caller
// must copy what it keeps.
func (x *Extractor) Partial() []byte {
	if !x.capturing {
		return nil
	}
	return x.buf
}

// index returns seg as an array index if it is a canonical decimal, else -1.
func index(seg string) int {
	if len(seg) > 9 || len(seg) > 1 && seg[0] == '0' {
		return -1
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Feed scans the next chunk of input and returns the elements it
// completed, in order. The Extractor does not keep p: the caller may
// reuse or modify it once Feed returns.
//
// On invalid input Feed returns the elements completed before the error
// and a [*SyntaxError]; the error is sticky. Feed panics if called after
// [Extractor.End].
func (x *Extractor) Feed(p []byte) ([]Element, error) {
	if x.ended {
		panic("jsonstream: Extractor.Feed after End")
	}
	if x.err != nil {
		return nil, x.err
	}
	var out []Element
	s := &x.s
	s.off = x.off
	x.from = 0
	for i := 0; ; {
		if x.capturing {
			// Inside an element nothing but its end matters.
			end, done, err := s.skip(p, i, x.capDepth)
			if err != nil {
				x.err = err
				break
			}
			x.pending = false
			if !done {
				break
			}
			out = append(out, x.element(p[x.from:end]))
			i = end
			continue
		}
		k, start, end, err := s.next(p, i)
		if err != nil {
			x.err = err
			break
		}
		if k == kNone {
			break
		}
		partial := k&kPartial != 0
		k &^= kPartial
		if !x.pending && k != kKey && k != kEndObject && k != kEndArray {
			x.begin(k, start)
		}
		if partial {
			x.pending = true
			break
		}
		x.pending = false
		i = end
		switch k {
		case kKey:
			n := len(s.stack) - 1
			if top := &s.stack[n]; top.on {
				top.match = keyIs(s.keys[top.keyStart:top.keyEnd], x.segs[n])
			}
		case kString, kNumber, kTrue, kFalse, kNull:
			if x.capturing { // a scalar element, complete
				out = append(out, x.element(p[x.from:end]))
			}
		}
	}
	if x.capturing {
		x.buf = append(x.buf, p[x.from:]...)
	}
	x.off += int64(len(p))
	return out, x.err
}

// End declares that the input is complete and returns the elements this
// completes: only a number that is the whole input can be one. It
// returns a [*SyntaxError] wrapping [io.ErrUnexpectedEOF] if the input
// ended before the JSON value was complete, or the error Feed returned.
// Calling End again returns nil and the same error.
func (x *Extractor) End() ([]Element, error) {
	if x.ended || x.err != nil {
		x.ended = true
		return nil, x.err
	}
	x.ended = true
	x.s.off = x.off
	var out []Element
	for {
		k, err := x.s.end()
		if err != nil {
			x.err = err
			return out, err
		}
		if k == kEOF {
			return out, nil
		}
		if x.capturing && len(x.s.stack) == x.capDepth { // a number
			out = append(out, x.element(nil))
		}
	}
}

// begin is called when a value of kind k starts at index start of the
// current chunk, outside any captured value. It starts a capture if the
// value is an element to hand over, and marks containers on the path.
func (x *Extractor) begin(k kind, start int) {
	stack := x.s.stack
	d := len(stack) // depth of the value: its number of enclosing containers
	if k == kBeginObject || k == kBeginArray {
		d-- // the scanner has already pushed it
	}
	if d > 0 {
		// A container is on the path only down to depth len(x.segs),
		// and only the target array below that.
		parent := &stack[d-1]
		switch {
		case !parent.on:
			return
		case parent.target:
			x.capturing, x.capDepth, x.capIndex, x.from = true, d, parent.index, start
			return
		case parent.obj:
			if !parent.match {
				return
			}
		case parent.index != x.idx[d-1]:
			return
		}
	}
	// The value is at path segs[:d].
	switch {
	case d < len(x.segs):
		if k == kBeginObject || k == kBeginArray {
			stack[d].on = true
		}
	case k == kBeginArray && !x.whole:
		stack[d].on, stack[d].target = true, true
	default:
		x.capturing, x.capDepth, x.capIndex, x.from = true, d, -1, start
	}
}

// element ends the capture with the bytes tail, the part of the value in
// the current chunk, and returns the element. Its Value and Path are
// new allocations of their own.
func (x *Extractor) element(tail []byte) Element {
	v := make([]byte, 0, len(x.buf)+len(tail))
	v = append(append(v, x.buf...), tail...)
	x.buf = x.buf[:0]
	x.capturing = false
	return Element{Index: x.capIndex, Path: x.elementPath(x.capIndex), Value: v}
}

// elementPath returns the path of the element at index i, or of the
// value at the path when i is -1, in a new allocation of its own
// (string(b) would not do: it returns static memory for one byte).
func (x *Extractor) elementPath(i int) string {
	if i < 0 {
		return strings.Clone(x.path)
	}
	var room [20]byte
	digits := strconv.AppendInt(room[:0], int64(i), 10)
	var b strings.Builder
	b.Grow(len(x.path) + 1 + len(digits))
	if x.path != "" {
		b.WriteString(x.path)
		b.WriteByte('.')
	}
	b.Write(digits)
	return b.String()
}

// keyIs reports whether the raw key (quotes included) decodes to seg.
func keyIs(raw []byte, seg string) bool {
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c >= 0x80 {
			return unquote(body) == seg
		}
	}
	return string(body) == seg
}

// Elements returns the elements at path (see [Extractor]) of the JSON value
// whose bytes are the concatenation of chunks, each as soon as the chunk
// holding its last byte has been read. It runs on the caller's goroutine,
// pulling the next chunk only when the elements found so far have been
// consumed. An error from chunks is yielded as is; a malformed path or
// invalid JSON yields an error as described for [NewExtractor],
// [Extractor.Feed] and [Extractor.End]. The sequence stops after yielding
// an error.
//
// Each range over the sequence ranges over chunks again, so the sequence
// is single-use when chunks is, as provider streams are.
func Elements(path string, chunks iter.Seq2[[]byte, error]) iter.Seq2[Element, error] {
	return func(yield func(Element, error) bool) {
		x, err := NewExtractor(path)
		if err != nil {
			yield(Element{}, err)
			return
		}
		for chunk, err := range chunks {
			if err != nil {
				yield(Element{}, err)
				return
			}
			els, err := x.Feed(chunk)
			for _, el := range els {
				if !yield(el, nil) {
					return
				}
			}
			if err != nil {
				yield(Element{}, err)
				return
			}
		}
		els, err := x.End()
		for _, el := range els {
			if !yield(el, nil) {
				return
			}
		}
		if err != nil {
			yield(Element{}, err)
		}
	}
}
