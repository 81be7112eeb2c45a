// Package jsonfast decodes and walks JSON that is already known to be
// valid. encoding/json's Decoder allocates a buffer per value and its
// Unmarshal cannot keep numbers exact; these run once per call and per
// output message in the agent loop, so they are written by hand. Callers
// check validity first, with [Valid].
package jsonfast

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Skip returns the offset just past the JSON value that starts at or after
// data[i] (after white space). data must be valid JSON.
func Skip(data []byte, i int) int {
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
	RawMembers(data, func(key, value []byte) bool { return f(unquote(key), value) })
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
		i = Skip(data, start)
		if !f(key, data[start:i]) {
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
			key := unquote(data[i:end])
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
		return unquote(data[i:end]), end
	case c == 't':
		return true, i + 4
	case c == 'f':
		return false, i + 5
	case c == 'n':
		return nil, i + 4
	default:
		end := Skip(data, i)
		return json.Number(data[i:end]), end
	}
}

// Unquote decodes a JSON string literal, quotes included. Invalid UTF-8
// becomes U+FFFD, as encoding/json decodes it.
func Unquote(lit []byte) string { return unquote(lit) }

// UnquoteShared is Unquote whose result shares the bytes of lit when
// nothing needs decoding: lit must never change.
func UnquoteShared(lit []byte) string {
	body := lit[1 : len(lit)-1]
	for j := 0; j < len(body); j++ {
		switch c := body[j]; {
		case c == '\\' || c < 0x20:
			return unquote(lit)
		case c >= 0x80:
			n := RuneLen(body, j)
			if n == 0 {
				return unquote(lit) // invalid UTF-8: decoded to U+FFFD
			}
			j += n - 1
		}
	}
	return unsafe.String(unsafe.SliceData(body), len(body))
}

// RuneLen returns the length of the valid UTF-8 sequence that starts at
// d[j], a byte of 0x80 or more, or 0 when there is none. The 2- and
// 3-byte forms (the dagger † is one) are checked here, the others by
// utf8.DecodeRune: string scanners call it as they go, instead of a
// second pass of utf8.Valid over the whole string.
func RuneLen(d []byte, j int) int {
	switch c := d[j]; {
	case c >= 0xC2 && c <= 0xDF:
		if j+1 < len(d) && d[j+1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	case c >= 0xE0 && c <= 0xEF:
		if j+2 < len(d) && d[j+1]&0xC0 == 0x80 && d[j+2]&0xC0 == 0x80 &&
			(c != 0xE0 || d[j+1] >= 0xA0) && (c != 0xED || d[j+1] < 0xA0) { // no overlong form, no surrogate
			return 3
		}
		return 0
	}
	if r, n := utf8.DecodeRune(d[j:]); r != utf8.RuneError || n > 1 {
		return n
	}
	return 0
}

func unquote(lit []byte) string {
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
		i = Skip(data, start)
		if !f(data[start:i]) {
			return
		}
	}
}
