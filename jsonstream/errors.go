package jsonstream

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors.
var (
	// ErrNeedInput is returned by [Decoder.Token] when the bytes fed so far
	// hold no further complete token and the end of the input has not been
	// declared with [Decoder.End]. Feed more input and call Token again.
	ErrNeedInput = errors.New("jsonstream: need more input")

	// ErrInvalidPath reports an extraction path with an empty segment, such
	// as "calls..args" or "calls.".
	ErrInvalidPath = errors.New("jsonstream: invalid path")
)

// SyntaxError reports input that is not valid JSON, or that ended before
// the JSON value was complete. In the latter case Err is
// [io.ErrUnexpectedEOF], so errors.Is(err, io.ErrUnexpectedEOF) tells a
// truncated stream from a malformed one.
type SyntaxError struct {
	// Offset is the byte offset in the input of the first byte that cannot
	// start or continue valid JSON, or the length of the input when it
	// ended early. A skipped code fence counts towards the offset.
	Offset int64
	// Path is the dot path of the value being read when the error occurred,
	// such as "calls.2.args"; "" is the root value. While an object key is
	// expected or being read it is the path of the object.
	Path string
	// Msg describes the error, in the words encoding/json uses, e.g.
	// "invalid character 'x' after object key".
	Msg string
	// Err is the cause: io.ErrUnexpectedEOF for input that ended early,
	// nil otherwise.
	Err error
}

// Error returns "jsonstream: offset N, path "p": msg"; the path part is
// left out for the root value.
func (e *SyntaxError) Error() string {
	var b strings.Builder
	b.WriteString("jsonstream: offset ")
	b.WriteString(strconv.FormatInt(e.Offset, 10))
	if e.Path != "" {
		b.WriteString(", path ")
		b.WriteString(strconv.Quote(e.Path))
	}
	b.WriteString(": ")
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	b.WriteString(msg)
	return b.String()
}

// Unwrap returns e.Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

// quoteChar formats c the way encoding/json's error messages do.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}
