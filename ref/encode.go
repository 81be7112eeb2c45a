package ref

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/augceo/agent/internal/jsonfast"
)

// Encode returns the JSON encoding of a decoded value: object keys sorted,
// no HTML escaping, numbers as they were read. Scalars take a fast path
// because most references name one.
func Encode(v any) (json.RawMessage, error) {
	switch c := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case bool:
		return strconv.AppendBool(nil, c), nil
	case json.Number:
		return json.RawMessage(c), nil
	case string:
		if simple(c) {
			b := make([]byte, 0, len(c)+2)
			b = append(b, '"')
			b = append(b, c...)
			return append(b, '"'), nil
		}
	}
	if b, ok := appendValue(make([]byte, 0, 64), v); ok {
		return b, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// simple reports whether s needs no escaping inside a JSON string.
func simple(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendValue appends v as Encode's encoder would, for the values
// decoding gives (objects, arrays, plain strings, valid numbers, booleans
// and null): merged data is encoded at every render. ok is false for
// anything else, which the encoder handles.
func appendValue(b []byte, v any) (_ []byte, ok bool) {
	switch c := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, c), true
	case json.Number:
		if c == "" || c[0] < '-' || c[0] > '9' || c[len(c)-1] < '0' || c[len(c)-1] > '9' || !jsonfast.Valid([]byte(c)) {
			return b, false // not a number alone
		}
		return append(b, c...), true
	case string:
		if !simple(c) {
			return b, false
		}
		return append(append(append(b, '"'), c...), '"'), true
	case []any:
		b = append(b, '[')
		for i, x := range c {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, x); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		b = append(b, '{')
		keys := slices.Collect(maps.Keys(c))
		if len(keys) > 1 {
			slices.Sort(keys)
		}
		for i, k := range keys {
			if !simple(k) {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), k...), '"', ':')
			if b, ok = appendValue(b, c[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}
