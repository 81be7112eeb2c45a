package ref

import (
	"encoding/json"
	"errors"
)

// Source gives the current value of a data identity's path. The message
// package's Log is the Source at run time; a Source bound to an instance
// falls back to global data itself.
//
// Lookup returns a JSON value owned by the caller, or an error that wraps
// ErrNotFound (possibly via ErrUnknownKind or ErrIndexRange) when nothing is
// there yet, ErrTypeClash when the writes to that place do not combine. A
// Source may be called concurrently only if its documentation says so.
type Source interface {
	Lookup(kind string, path Path) (json.RawMessage, error)
}

// Eval evaluates e as an input expression: the value of the first
// alternative whose references all resolve, which is the value of that
// alternative's last reference. When no alternative resolves, the error is
// that of the first missing reference of the first alternative. Errors other
// than "not found" stop the evaluation at once.
func Eval(src Source, e Expr) (json.RawMessage, error) {
	var first error
	for _, g := range e.Alts {
		var v json.RawMessage
		var err error
		for _, r := range g {
			v, err = src.Lookup(r.Kind, r.Path)
			if err != nil {
				err = locate(err, e, r)
				break
			}
		}
		if err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// EvalString parses and evaluates s as an input expression.
func EvalString(src Source, s string) (json.RawMessage, error) {
	e, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return Eval(src, e)
}

// locate fills in where err happened.
func locate(err error, e Expr, r Ref) error {
	var re *Error
	if errors.As(err, &re) && re.Expr == "" {
		c := *re
		c.Expr, c.Offset, c.Ref = e.Text, r.Offset, r.String()
		c.target, c.targeted = r, true
		return &c
	}
	if re != nil {
		return err
	}
	return &Error{Expr: e.Text, Offset: r.Offset, Ref: r.String(), Err: err, target: r, targeted: true}
}
