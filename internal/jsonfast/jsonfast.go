// Package jsonfast holds a few allocation-light helpers over JSON that is
// known to be valid: [Members] and [RawMembers] walk an object, [Decode]
// decodes a value and [Unquote] a string literal, without the buffers
// encoding/json's Decoder allocates per value, and keeping numbers exact.
// Callers check validity first with [Valid], which is json.Valid without
// its state machine; [WithPosition] says where JSON that is not valid
// breaks. They run several times per call in the agent loop,
// which is why they are written by hand; each is fuzzed against
// encoding/json.
package jsonfast

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// skip returns the offset just past the JSON value that starts at or after
// data[i] (after white space). data must be valid JSON.
func skip(data []byte, i int) int {
	i = space(data, i)
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(data) && !delim(data[i]) {
			i++
		}
		return i
	}
}

func delim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

func space(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset past the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// Members calls f with each key and raw value of the object in data, in
// order, until f returns false. data must be a valid JSON object.
func Members(data []byte, f func(key string, value []byte) bool) {
	RawMembers(data, func(key, value []byte) bool { return f(Unquote(key), value) })
}

// RawMembers is Members with each key as it is written, a JSON string
// literal, quotes included: callers that only compare most keys need not
// allocate them. [Unquote] decodes one.
func RawMembers(data []byte, f func(key, value []byte) bool) {
	i := space(data, 0) + 1 // past '{'
	for {
		i = space(data, i)
		if i >= len(data) || data[i] == '}' {
			return
		}
		if data[i] == ',' {
			i++
			continue
		}
		end := skipString(data, i)
		key := data[i:end]
		i = space(data, end) + 1 // past ':'
		start := space(data, i)
		i = skip(data, start)
		if !f(key, data[start:i]) {
			return
		}
	}
}

// Elements calls f with each raw element of the array in data, in order,
// until f returns false. data must be a valid JSON array.
func Elements(data []byte, f func(value []byte) bool) {
	i := space(data, 0) + 1 // past '['
	for {
		i = space(data, i)
		if i >= len(data) || data[i] == ']' {
			return
		}
		if data[i] == ',' {
			i++
			continue
		}
		start := i
		i = skip(data, start)
		if !f(data[start:i]) {
			return
		}
	}
}

// Decode decodes valid JSON into map[string]any, []any, string,
// json.Number, bool and nil, as encoding/json's Decoder with UseNumber does.
func Decode(data []byte) any {
	v, _ := decode(data, space(data, 0))
	return v
}

func decode(data []byte, i int) (any, int) {
	i = space(data, i)
	switch c := data[i]; {
	case c == '{':
		m := map[string]any{}
		i++
		for {
			i = space(data, i)
			switch data[i] {
			case '}':
				return m, i + 1
			case ',':
				i++
				continue
			}
			end := skipString(data, i)
			key := Unquote(data[i:end])
			i = space(data, end) + 1
			var v any
			v, i = decode(data, i)
			m[key] = v
		}
	case c == '[':
		a := []any{}
		i++
		for {
			i = space(data, i)
			switch data[i] {
			case ']':
				return a, i + 1
			case ',':
				i++
				continue
			}
			var v any
			v, i = decode(data, i)
			a = append(a, v)
		}
	case c == '"':
		end := skipString(data, i)
		return Unquote(data[i:end]), end
	case c == 't':
		return true, i + 4
	case c == 'f':
		return false, i + 5
	case c == 'n':
		return nil, i + 4
	default:
		end := skip(data, i)
		return json.Number(data[i:end]), end
	}
}

// Unquote decodes a JSON string literal, quotes included. Invalid UTF-8
// becomes U+FFFD, as encoding/json decodes it.
func Unquote(lit []byte) string {
	body := lit[1 : len(lit)-1]
	plain := true
	for _, c := range body {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain && utf8.Valid(body) {
		return string(body)
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return s
}
