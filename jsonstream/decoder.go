package jsonstream

import (
	"encoding/json"
	"io"
	"reflect"
	"strconv"
)

// Decoder is a pull tokenizer for one JSON value that arrives in chunks. It
// is shaped like [encoding/json.Decoder.Token], but it never blocks: the
// caller pushes each chunk with [Decoder.Feed] and pulls the tokens that are
// complete so far with [Decoder.Token], which returns [ErrNeedInput] when
// the next token needs more bytes. [Decoder.End] declares the end of the
// input, after which Token returns the last tokens and then nil, [io.EOF].
//
// A Decoder keeps only the bytes it has been fed but not yet returned as
// tokens, plus the keys of the open objects, and scans every byte once.
// It is not safe for concurrent use.
type Decoder struct {
	s         scanner
	buf       []byte // fed bytes not yet consumed; buf[0] is at offset bufOff
	bufOff    int64
	pos       int   // next byte of buf to scan
	lastEnd   int64 // offset after the last token returned
	tokStart  int   // start in buf of a token cut by the end of the input so far, or -1
	last      kind
	ended     bool
	useNumber bool
	err       error // sticky: a syntax error or io.EOF
}

// NewDecoder returns a Decoder waiting for its first chunk.
func NewDecoder() *Decoder {
	return &Decoder{tokStart: -1}
}

// UseNumber makes Token return numbers as [encoding/json.Number] instead of
// float64, as [encoding/json.Decoder.UseNumber] does.
func (d *Decoder) UseNumber() { d.useNumber = true }

// Feed appends a chunk of input. The Decoder copies p, so the caller may
// reuse it. Feed panics if called after [Decoder.End].
func (d *Decoder) Feed(p []byte) {
	if d.ended {
		panic("jsonstream: Decoder.Feed after End")
	}
	if d.err != nil || len(p) == 0 {
		return
	}
	keep := d.pos
	if d.tokStart >= 0 {
		keep = d.tokStart
	}
	// Drop consumed bytes once they are at least half of the buffer, so
	// each byte is moved a bounded number of times.
	if keep > 0 && keep >= len(d.buf)-keep {
		n := copy(d.buf, d.buf[keep:])
		d.buf = d.buf[:n]
		d.bufOff += int64(keep)
		d.pos -= keep
		if d.tokStart >= 0 {
			d.tokStart -= keep
		}
	}
	d.buf = append(d.buf, p...)
}

// End declares that the input is complete: no more chunks will be fed.
func (d *Decoder) End() { d.ended = true }

// Token returns the next JSON token: an [encoding/json.Delim] for [ ] { },
// a bool, a float64 (or [encoding/json.Number] after [Decoder.UseNumber]),
// a string for a string value or an object key, or nil for null. Commas
// and colons are checked but not returned. Mismatched delimiters and any
// other invalid input give a [*SyntaxError].
//
// When the bytes fed so far hold no complete next token, Token returns
// [ErrNeedInput] if the input may continue, or a *SyntaxError wrapping
// [io.ErrUnexpectedEOF] after [Decoder.End]. At the end of a complete
// value it returns nil, [io.EOF]. Syntax errors and io.EOF are sticky.
//
// A number whose magnitude is too large for a float64 gives an
// [*encoding/json.UnmarshalTypeError], as in encoding/json; it is not sticky.
func (d *Decoder) Token() (json.Token, error) {
	if d.err != nil {
		return nil, d.err
	}
	d.s.off = d.bufOff
	k, start, end, err := d.s.next(d.buf, d.pos)
	if err != nil {
		d.err = err
		return nil, err
	}
	switch {
	case k == kNone:
		d.pos = end
		if !d.ended {
			return nil, ErrNeedInput
		}
		d.s.off = d.bufOff + int64(len(d.buf))
		if _, err := d.s.end(); err != nil {
			d.err = err
			return nil, err
		}
		d.err = io.EOF
		return nil, io.EOF
	case k&kPartial != 0:
		if d.tokStart < 0 {
			d.tokStart = start
		}
		d.pos = end
		if !d.ended {
			return nil, ErrNeedInput
		}
		d.s.off = d.bufOff + int64(len(d.buf))
		if k, err = d.s.end(); err != nil {
			d.err = err
			return nil, err
		}
	}
	if d.tokStart >= 0 {
		start, d.tokStart = d.tokStart, -1
	}
	d.pos = end
	d.last = k
	d.lastEnd = d.bufOff + int64(end)
	return d.token(k, d.buf[start:end], d.bufOff+int64(start))
}

// token converts the raw bytes of a complete token at offset off.
func (d *Decoder) token(k kind, raw []byte, off int64) (json.Token, error) {
	switch k {
	case kBeginObject:
		return json.Delim('{'), nil
	case kEndObject:
		return json.Delim('}'), nil
	case kBeginArray:
		return json.Delim('['), nil
	case kEndArray:
		return json.Delim(']'), nil
	case kKey, kString:
		return unquote(raw[1 : len(raw)-1]), nil
	case kNumber:
		if d.useNumber {
			return json.Number(raw), nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, &json.UnmarshalTypeError{Value: "number " + string(raw), Type: reflect.TypeFor[float64](), Offset: off}
		}
		return f, nil
	case kTrue:
		return true, nil
	case kFalse:
		return false, nil
	}
	return nil, nil // kNull
}

// Path returns the dot path of the value that the last token returned by
// Token belongs to: the container for a delimiter, the member a key names,
// the value itself for a string, number, bool or null. Object keys appear
// decoded and array elements as decimal indexes, as in "calls.0.args";
// the root value is "".
func (d *Decoder) Path() string {
	frames := d.s.stack
	if d.last == kBeginObject || d.last == kBeginArray {
		frames = frames[:len(frames)-1]
	}
	return string(d.s.appendPath(nil, frames))
}

// InputOffset returns the offset in the input just after the last token
// returned by Token.
func (d *Decoder) InputOffset() int64 {
	return d.lastEnd
}
