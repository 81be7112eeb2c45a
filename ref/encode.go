package ref

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
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
