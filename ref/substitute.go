package ref

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/augceo/agent/internal/jsonfast"
)

// Substitute returns params with every expression replaced by its value
// from src, keeping the value's JSON type: "†input.amount" becomes 50.0, not
// "50.0". Expressions may sit at any depth. Top-level keys that start with
// '_' are meta-properties (such as _outputPath) and are left as they are.
// Strings that start with "††" lose one dagger (see [Literal]).
//
// Params whose parameters hold no dagger are returned as they are,
// without copying. Otherwise members keep their order and the values that
// held expressions are re-encoded with sorted keys. An error is an *Error
// whose Param field is the JSON pointer of the failing parameter.
func Substitute(src Source, params json.RawMessage) (json.RawMessage, error) {
	if !mayHaveDagger(params) {
		return params, nil
	}
	if !jsonfast.Valid(params) {
		_, err := Decode(params)
		return nil, fmt.Errorf("ref: params: %w", err)
	}
	if t := bytes.TrimSpace(params); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("ref: params must be a JSON object, got %s", typeName(jsonfast.Decode(params)))
	}
	return substituteObject(src, params)
}

// SubstituteObject is [Substitute] for params known to be a valid JSON
// object, such as the calls of a plan that was analysed: it does not
// check them again. On anything else its result is undefined.
func SubstituteObject(src Source, params json.RawMessage) (json.RawMessage, error) {
	if !mayHaveDagger(params) {
		return params, nil
	}
	return substituteObject(src, params)
}

func substituteObject(src Source, params json.RawMessage) (json.RawMessage, error) {
	// Only members that are not meta-properties and hold a dagger change;
	// the others are kept byte for byte.
	changed := false
	jsonfast.RawMembers(params, func(k, v []byte) bool {
		changed = !isMeta(k) && mayHaveDagger(v)
		return !changed
	})
	if !changed {
		return params, nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	var err error
	jsonfast.RawMembers(params, func(lit, v []byte) bool {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		if plainKey(lit) {
			b.Write(lit)
		} else {
			writeKey(&b, jsonfast.Unquote(lit))
		}
		b.WriteByte(':')
		if isMeta(lit) || !mayHaveDagger(v) {
			b.Write(v)
			return true
		}
		var nv any
		switch val := jsonfast.Decode(v).(type) {
		case string: // the usual parameter, one expression: its pointer is made only for an error
			if nv, err = substituteString(src, val); err != nil {
				err = withParam(err, "/"+PointerEscape(jsonfast.Unquote(lit)))
				return false
			}
		default:
			if nv, err = substitute(src, val, "/"+PointerEscape(jsonfast.Unquote(lit))); err != nil {
				return false
			}
		}
		var enc []byte
		if enc, err = encodeValue(nv); err != nil {
			return false
		}
		b.Write(enc)
		return true
	})
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// isMeta reports whether a key, a JSON string literal, names a
// meta-property: it starts with '_'.
func isMeta(lit []byte) bool {
	if bytes.IndexByte(lit, '\\') < 0 {
		return len(lit) > 2 && lit[1] == '_'
	}
	return strings.HasPrefix(jsonfast.Unquote(lit), "_")
}

// plainKey reports whether a key, a JSON string literal, is written as
// json.Marshal writes what it decodes to.
func plainKey(lit []byte) bool {
	for _, c := range lit[1 : len(lit)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// writeKey writes k as json.Marshal encodes it.
func writeKey(b *bytes.Buffer, k string) {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			kb, _ := json.Marshal(k)
			b.Write(kb)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(k)
	b.WriteByte('"')
}

// encodeValue encodes a substituted value: sorted keys, no HTML escaping.
func encodeValue(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("ref: encode params: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func substitute(src Source, v any, at string) (any, error) {
	switch c := v.(type) {
	case string:
		nv, err := substituteString(src, c)
		if err != nil {
			return nil, withParam(err, at)
		}
		return nv, nil
	case map[string]any:
		for k, x := range c {
			nv, err := substitute(src, x, at+"/"+PointerEscape(k))
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

// substituteString is substitute for a string, with errors that do not
// name the parameter yet.
func substituteString(src Source, c string) (any, error) {
	if !IsExpression(c) {
		return Literal(c), nil
	}
	e, err := Parse(c)
	if err != nil {
		return nil, err
	}
	raw, err := Eval(src, e)
	if err != nil {
		return nil, err
	}
	return raw, nil
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

// PointerEscape escapes a key for a JSON pointer (RFC 6901): ~ and /.
func PointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
