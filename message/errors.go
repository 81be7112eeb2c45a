package message

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrInvalid reports a message that does not have the shape its type needs.
	ErrInvalid = errors.New("message: invalid")
)

// Error reports a malformed message: which one and which field.
type Error struct {
	Index int    // position of the message in its context or log; -1 if unknown
	Field string // the offending field, e.g. "kind" or "_outputPath"; empty for the whole message
	Err   error
}

func (e *Error) Error() string {
	s := "message"
	if e.Index >= 0 {
		s = fmt.Sprintf("message %d", e.Index)
	}
	if e.Field != "" {
		s += fmt.Sprintf(": field %q", e.Field)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) *Error {
	return &Error{Index: -1, Field: field, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)}
}

// at returns err with the message index set.
func at(i int, err error) error {
	var me *Error
	if errors.As(err, &me) {
		c := *me
		c.Index = i
		return &c
	}
	return &Error{Index: i, Err: err}
}
