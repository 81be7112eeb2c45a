package jsonstream

import (
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"unsafe"

	"github.com/augceo/agent/internal/jsonfast"
)

// Element is a value handed over by an [Extractor]: an element of the array
// at the extraction path, or the value at that path when it is not an array.
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
	// owns.
	Value json.RawMessage
	// Offset is where Value starts in the input, counted in bytes from
	// the first byte fed.
	Offset int64
}

// Span is where an array at the extraction path lies in the input: from
// its '[' to just past its ']', in bytes from the first byte fed. End is
// -1 while the array is open.
type Span struct{ Start, End int64 }

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
	capFast   bool   // the captured container began in this chunk: try to check it whole
	capDepth  int    // stack depth at which the captured value began
	capIndex  int    // its Element.Index
	from      int    // start in the current chunk of the captured bytes
	buf       []byte // captured bytes from earlier chunks
	arena     []byte // where the elements of the current chunk are copied: one allocation per chunk
	rest      int    // bytes of the current chunk and buf that an element may still copy

	ended  bool
	err    error
	noPath bool // see SkipPaths

	shared   bool   // the chunk being fed never changes: elements may share it
	spans    []Span // the arrays at the path, in order
	spanDeep int    // the depth of the open one's elements, 0 when none is open
	capOff   int64  // the offset of the captured value

	// Room for the segments of a short path, as "calls" is.
	segsBuf [2]string
	idxBuf  [2]int
}

// NewExtractor returns an Extractor for the value at path. It returns an
// error wrapping [ErrInvalidPath] if a segment of path is empty.
func NewExtractor(path string) (*Extractor, error) {
	x := &Extractor{}
	if err := x.init(path); err != nil {
		return nil, err
	}
	return x, nil
}

// Reset makes x an Extractor for path, as NewExtractor makes one, that
// keeps the room x grew for its scanner: a caller that reads many inputs
// in turn can reuse one Extractor. Elements x handed over before stay as
// they are; the slice Spans returned is reused.
func (x *Extractor) Reset(path string) error {
	stack, keys, buf, spans := x.s.stack[:0], x.s.keys[:0], x.buf[:0], x.spans[:0]
	*x = Extractor{}
	x.s.stack, x.s.keys, x.buf, x.spans = stack, keys, buf, spans
	return x.init(path)
}

// init sets up a zero x for path.
func (x *Extractor) init(path string) error {
	x.path = path
	if path == "" {
		return nil
	}
	x.segs = x.segsBuf[:0]
	for seg := range strings.SplitSeq(path, ".") {
		x.segs = append(x.segs, seg)
	}
	x.idx = x.idxBuf[:0]
	if len(x.segs) > len(x.idxBuf) {
		x.idx = make([]int, 0, len(x.segs))
	}
	x.idx = x.idx[:len(x.segs)]
	for i, seg := range x.segs {
		if seg == "" {
			return fmt.Errorf("%w %q: empty segment", ErrInvalidPath, path)
		}
		x.idx[i] = index(seg)
	}
	return nil
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
// completed, in order. The Extractor does not keep p.
//
// On invalid input Feed returns the elements completed before the error
// and a [*SyntaxError]; the error is sticky. Feed panics if called after
// [Extractor.End].
func (x *Extractor) Feed(p []byte) ([]Element, error) { return x.feed(nil, p, false) }

// FeedShared is Feed for input that never changes, such as the bytes of
// a string: an element that lies whole in p shares p's bytes instead of
// being copied. An element begun in an earlier chunk is copied as Feed
// copies it.
func (x *Extractor) FeedShared(p []byte) ([]Element, error) { return x.feed(nil, p, true) }

// AppendShared is FeedShared that appends the elements to dst and
// returns the extended slice, so that a caller can reuse one buffer for
// the elements of every chunk.
func (x *Extractor) AppendShared(dst []Element, p []byte) ([]Element, error) {
	return x.feed(dst, p, true)
}

func (x *Extractor) feed(out []Element, p []byte, shared bool) ([]Element, error) {
	if x.ended {
		panic("jsonstream: Extractor.Feed after End")
	}
	if x.err != nil {
		return out, x.err
	}
	n0 := len(out)
	s := &x.s
	s.off = x.off
	x.from = 0
	x.arena, x.rest = nil, len(x.buf)+len(p)
	x.shared = shared
	for i := 0; ; {
		if x.capturing && x.capFast {
			// An element that lies whole in the chunk, as most do when
			// the answer comes in large chunks, is checked in one pass
			// rather than token by token; any other goes the token way,
			// which also says what is wrong with a bad one.
			x.capFast = false
			if end, ok := jsonfast.ValueEnd(p, x.from); ok {
				s.close(x.capDepth)
				x.pending = false
				out = append(out, x.element(p[x.from:end]))
				i = end
				continue
			}
		}
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
		case kEndArray:
			if x.spanDeep > 0 && len(s.stack) == x.spanDeep-1 {
				x.spans[len(x.spans)-1].End = x.off + int64(end)
				x.spanDeep = 0
			}
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
	x.arena = nil
	x.paths(out[n0:])
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
	x.arena, x.rest, x.shared = nil, len(x.buf), false
	var out []Element
	for {
		k, err := x.s.end()
		if err != nil {
			x.err = err
			x.paths(out)
			return out, err
		}
		if k == kEOF {
			x.paths(out)
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
			x.capOff = x.off + int64(start)
			x.capFast = k == kBeginObject || k == kBeginArray
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
	case k == kBeginArray:
		stack[d].on, stack[d].target = true, true
		x.spans = append(x.spans, Span{Start: x.off + int64(start), End: -1})
		x.spanDeep = d + 1
	default:
		x.capturing, x.capDepth, x.capIndex, x.from = true, d, -1, start
		x.capOff = x.off + int64(start)
		x.capFast = k == kBeginObject || k == kBeginArray
	}
}

// element ends the capture with the bytes tail and returns the element.
// Its Path is set by paths once the chunk is done.
func (x *Extractor) element(tail []byte) Element {
	if x.shared && len(x.buf) == 0 {
		x.capturing = false
		return Element{Index: x.capIndex, Value: tail[:len(tail):len(tail)], Offset: x.capOff}
	}
	n := len(x.buf) + len(tail)
	if cap(x.arena)-len(x.arena) < n {
		// Room for the elements the rest of the chunk can hold, up to a
		// bound: the elements of a chunk share an allocation or a few.
		x.arena = make([]byte, 0, max(n, min(x.rest, arenaMax)))
	}
	start := len(x.arena)
	x.arena = append(append(x.arena, x.buf...), tail...)
	x.rest -= n
	x.buf = x.buf[:0]
	x.capturing = false
	// The capacity ends with the value: appending to it cannot reach the
	// next element.
	return Element{Index: x.capIndex, Value: x.arena[start:len(x.arena):len(x.arena)], Offset: x.capOff}
}

// Spans returns where the arrays at the path lie in the input so far,
// in order: one unless the path repeats a key. A caller that has the
// whole input can take the array out of it, or its elements by their
// Offset, without scanning it again. The slice is x's until x is Reset.
func (x *Extractor) Spans() []Span { return x.spans }

// arenaMax bounds what an element copy allocates beyond its own size.
const arenaMax = 8 << 10

// SkipPaths makes x leave the Path of the elements it hands over empty,
// for a caller that needs only their Index: a chunk's paths otherwise
// take an allocation. Reset undoes it.
func (x *Extractor) SkipPaths() { x.noPath = true }

// paths sets the Path of the elements of one chunk, all in one string.
func (x *Extractor) paths(els []Element) {
	if x.noPath {
		return
	}
	size := 0
	for i := range els {
		if els[i].Index >= 0 {
			size += len(x.path) + 21
		}
	}
	if size == 0 {
		for i := range els {
			els[i].Path = x.path
		}
		return
	}
	b := make([]byte, 0, size)
	for i := range els {
		if els[i].Index >= 0 {
			b = x.appendPath(b, els[i].Index)
		}
	}
	all := unsafe.String(unsafe.SliceData(b), len(b)) // b is not written again
	var tmp [64]byte
	from := 0
	for i := range els {
		if els[i].Index < 0 {
			els[i].Path = x.path
			continue
		}
		n := len(x.appendPath(tmp[:0], els[i].Index))
		els[i].Path = all[from : from+n]
		from += n
	}
}

func (x *Extractor) appendPath(b []byte, i int) []byte {
	if x.path != "" {
		b = append(append(b, x.path...), '.')
	}
	return strconv.AppendInt(b, int64(i), 10)
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
