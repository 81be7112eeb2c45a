// Package eventtest helps the adapters' fuzz tests compare their decoding
// of stream events, with encoding/json, against their SDK's decoding.
package eventtest

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Comparable reports whether both decoders should read data alike: it is
// valid UTF-8, none of keys is in it as a string in another case (as an
// object key, encoding/json takes it for the key and the SDKs do not; a
// value is left out too, for simplicity), and no object in it has a key
// twice (encoding/json takes the last value and merges objects, the SDKs
// take the first). No server sends such JSON.
func Comparable(data []byte, keys ...string) bool {
	return utf8.Valid(data) && !foldedKey(data, keys) && !repeatedKey(data)
}

func foldedKey(data []byte, keys []string) bool {
	lower := bytes.ToLower(data)
	for _, k := range keys {
		q := []byte(`"` + k + `"`)
		if bytes.Count(lower, q) != bytes.Count(data, q) {
			return true
		}
	}
	return false
}

// repeatedKey reports whether an object in data has a key twice; false
// when data is not valid JSON.
func repeatedKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []map[string]bool // the keys of each open object; nil for an array
	key := true                 // whether the next string in an object is a key
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			stack, key = append(stack, map[string]bool{}), true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if s, ok := tok.(string); ok && key && len(stack) > 0 && stack[len(stack)-1] != nil {
				if stack[len(stack)-1][s] {
					return true
				}
				stack[len(stack)-1][s], key = true, false
				continue
			}
		}
		key = true // a value ended
	}
}
