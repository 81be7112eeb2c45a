package ref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Substitute returns params with every expression replaced by its value
// from src, keeping the value's JSON type: "†input.amount" becomes 50.0, not
// "50.0". Expressions may sit at any depth. Top-level keys that start with
// '_' are meta-properties (such as _outputPath) and are left as they are.
// Strings that start with "††" lose one dagger (see [Literal]).
//
// Params with no dagger at all are returned as they are, without copying.
// Otherwise the result is re-encoded with sorted keys. An error is an *Error
// whose Param field is the JSON pointer of the failing parameter.
func Substitute(src Source, params json.RawMessage) (json.RawMessage, error) {
	if !mayHaveDagger(params) {
		return params, nil
	}
	v, err := Decode(params)
	if err != nil {
		return nil, fmt.Errorf("ref: params: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ref: params must be a JSON object, got %s", typeName(v))
	}
	for k, x := range obj {
		if strings.HasPrefix(k, "_") {
			continue
		}
		nv, err := substitute(src, x, "/"+pointerEscape(k))
		if err != nil {
			return nil, err
		}
		obj[k] = nv
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("ref: encode params: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func substitute(src Source, v any, at string) (any, error) {
	switch c := v.(type) {
	case string:
		if !IsExpression(c) {
			return Literal(c), nil
		}
		e, err := Parse(c)
		if err != nil {
			return nil, withParam(err, at)
		}
		raw, err := Eval(src, e)
		if err != nil {
			return nil, withParam(err, at)
		}
		return raw, nil
	case map[string]any:
		for k, x := range c {
			nv, err := substitute(src, x, at+"/"+pointerEscape(k))
			if err != nil {
				return nil, err
			}
			c[k] = nv
		}
	case []any:
		for i, x := range c {
			nv, err := substitute(src, x, at+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			c[i] = nv
		}
	}
	return v, nil
}

func withParam(err error, at string) error {
	var re *Error
	if errors.As(err, &re) {
		c := *re
		c.Param = at
		return &c
	}
	return &Error{Param: at, Offset: -1, Err: err}
}

// mayHaveDagger reports whether data can hold a dagger, raw or escaped.
func mayHaveDagger(data []byte) bool {
	return bytes.Contains(data, []byte(Dagger)) || bytes.Contains(data, []byte(`\u2020`))
}

func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
