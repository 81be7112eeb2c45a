package jsonfast

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth is encoding/json's nesting limit: deeper input is invalid.
const maxDepth = 10000

// Valid reports whether data is one JSON value with optional white space
// around it, exactly as json.Valid does (which, like it, does not check
// UTF-8), without encoding/json's state machine: it runs several times per
// call in the agent loop.
func Valid(data []byte) bool {
	i, ok := validValue(data, space(data, 0), 0)
	return ok && space(data, i) == len(data)
}

// validValue checks the value at data[i:] and returns its end.
func validValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '{':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = space(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(data, i); !ok {
				return i, false
			}
			if i = space(data, i); i >= len(data) || data[i] != ':' {
				return i, false
			}
			if i, ok = validValue(data, space(data, i+1), depth); !ok {
				return i, false
			}
			if i = space(data, i); i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '}':
				return i + 1, true
			case ',':
				i = space(data, i+1)
			default:
				return i, false
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return i, false
		}
		i = space(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = validValue(data, i, depth); !ok {
				return i, false
			}
			if i = space(data, i); i >= len(data) {
				return i, false
			}
			switch data[i] {
			case ']':
				return i + 1, true
			case ',':
				i = space(data, i+1)
			default:
				return i, false
			}
		}
	case c == '"':
		return validString(data, i)
	case c == 't':
		return validLiteral(data, i, "true")
	case c == 'f':
		return validLiteral(data, i, "false")
	case c == 'n':
		return validLiteral(data, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(data, i)
	}
	return i, false
}

func validLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// validString checks the string at data[i] (a '"') and returns its end.
func validString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		// Skip 8 bytes at a time while none is '"', '\\' or below 0x20:
		// the high bit of a byte of m is set for the first such byte (and
		// maybe for later ones). Bytes of 0x80 and up pass, as in json.Valid.
		for ; i+8 <= len(data); i += 8 {
			v := binary.LittleEndian.Uint64(data[i:])
			q, b := v^(ones*'"'), v^(ones*'\\')
			if m := ((v-ones*0x20)&^v | (q-ones)&^q | (b-ones)&^b) & high; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		if plainByte[c] {
			continue
		}
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(data)-i < 5 {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// plainByte tells the bytes a string holds as they are: one lookup per
// byte where the checks would be three.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// validNumber checks the number at data[i:] and returns its end.
func validNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// Constants for testing 8 bytes at a time.
const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)
