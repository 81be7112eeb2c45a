package ref

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. ErrUnknownKind and ErrIndexRange wrap ErrNotFound, so
// errors.Is(err, ErrNotFound) holds for every "does not resolve (yet)" case.
var (
	// ErrSyntax reports a malformed expression or path.
	ErrSyntax = errors.New("ref: syntax error")
	// ErrNotFound reports a path with no value.
	ErrNotFound = errors.New("ref: not found")
	// ErrUnknownKind reports a kind that no message in the context carries.
	ErrUnknownKind = fmt.Errorf("%w: unknown kind", ErrNotFound)
	// ErrIndexRange reports an array index past the end of the array.
	ErrIndexRange = fmt.Errorf("%w: index out of range", ErrNotFound)
	// ErrTypeClash reports a write that does not fit the value it lands on,
	// such as push onto a string or a key below a number.
	ErrTypeClash = errors.New("ref: type clash")
	// ErrMethod reports an unknown output method.
	ErrMethod = errors.New("ref: unknown output method")
)

// Error reports where an expression failed. Its fields locate the failure;
// Err is one of the package sentinels, possibly wrapped with detail.
type Error struct {
	Param  string // JSON pointer of the call parameter holding Expr, if any
	Expr   string // the whole expression as written
	Offset int    // byte offset in Expr of the failing reference or syntax error; -1 if unknown; the message gives it when above 0
	Ref    string // the failing reference, e.g. "†state.user.name"; empty for syntax errors
	At     string // the path (without kind) where resolution stopped, e.g. "user"
	Err    error

	target   Ref // Ref parsed, when set by evaluation
	targeted bool
}

// Target returns the failing reference as evaluation parsed it, so that
// a caller waiting for it need not parse Ref again; ok is false when the
// error does not come from evaluating one.
func (e *Error) Target() (r Ref, ok bool) { return e.target, e.targeted }

func (e *Error) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "ref: ")
	var b strings.Builder
	// Enough for all but escapes: errors are formatted often while a
	// step waits for the values its calls reference.
	b.Grow(len(e.Param) + len(e.Expr) + len(e.Ref) + len(e.At) + len(msg) + 64)
	if e.Param != "" {
		b.WriteString("param ")
		b.WriteString(e.Param)
		b.WriteString(": ")
	}
	b.WriteString("ref ")
	writeQuoted(&b, e.Expr)
	// Offset 0 says nothing the expression does not: the reference or
	// the syntax error starts it.
	if e.Offset > 0 {
		b.WriteString(" at offset ")
		var n [20]byte
		b.Write(strconv.AppendInt(n[:0], int64(e.Offset), 10))
	}
	if e.Ref != "" && e.Ref != e.Expr {
		b.WriteString(" (")
		b.WriteString(e.Ref)
		b.WriteString(")")
	}
	if e.At != "" {
		b.WriteString(" at path ")
		writeQuoted(&b, e.At)
	}
	b.WriteString(": ")
	b.WriteString(msg)
	return b.String()
}

// writeQuoted writes strconv.Quote(s), without building it apart when s
// needs no escape.
func writeQuoted(b *strings.Builder, s string) {
	for _, r := range s {
		if r == '"' || r == '\\' || r == utf8.RuneError || !strconv.IsPrint(r) {
			b.WriteString(strconv.Quote(s))
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

func (e *Error) Unwrap() error { return e.Err }

// syntaxErr builds a syntax error at offset in expr.
func syntaxErr(expr string, offset int, format string, args ...any) *Error {
	return &Error{Expr: expr, Offset: offset, Err: fmt.Errorf("%w: "+format, append([]any{ErrSyntax}, args...)...)}
}
