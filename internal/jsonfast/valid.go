package jsonfast

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
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

// ValueEnd returns the end of the JSON value that starts at data[i], and
// false when data holds no complete valid value there (it may end first,
// or go on with what the value cannot hold): what a streaming scanner can
// check at once when a whole value lies in the chunk it has.
func ValueEnd(data []byte, i int) (int, bool) { return validValue(data, i, 0) }

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

// CompactArray joins values, each valid JSON, into a JSON array, each
// compact: one with white space is compacted, the others (the usual case)
// are copied as they are. The calls of a step become its plan this way,
// each as the model wrote it: json.Marshal would also escape <, > and &,
// and look at every byte that is not ASCII to do so. nil gives "null".
func CompactArray(values []json.RawMessage) json.RawMessage {
	if values == nil {
		return json.RawMessage("null")
	}
	n := 2
	for _, v := range values {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		if !HasSpace(v) {
			b = append(b, v...)
			continue
		}
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, v); err != nil {
			buf.Write(v) // not valid after all: kept as it is
		}
		b = buf.Bytes()
	}
	return append(b, ']')
}

// PlainASCIIEnd returns the index of the first byte from d[j] on that a
// JSON string does not hold as it is or that is not ASCII (below 0x20,
// '"', '\\', 0x80 and up), or len(d): the bulk of a string body, read 8
// bytes at a time.
func PlainASCIIEnd(d []byte, j int) int {
	// The high bit of a byte of m is set for the first such byte (and
	// maybe for later ones).
	for ; j+8 <= len(d); j += 8 {
		v := binary.LittleEndian.Uint64(d[j:])
		q, b := v^(ones*'"'), v^(ones*'\\')
		if m := ((v-ones*0x20)&^v | (q-ones)&^q | (b-ones)&^b | v) & high; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for j < len(d) && plainASCII[d[j]] {
		j++
	}
	return j
}

// plainASCII tells the bytes a string holds as they are that are ASCII.
var plainASCII = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
	}
	return t
}()

// HasSpace reports whether v holds a space, tab, line feed or carriage
// return, looking 8 bytes at a time for any byte up to ' '.
func HasSpace(v []byte) bool {
	for i := 0; i < len(v); i++ {
		for ; i+8 <= len(v); i += 8 {
			w := binary.LittleEndian.Uint64(v[i:])
			if m := (w - ones*'!') &^ w & high; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		if i == len(v) {
			break
		}
		if c := v[i]; c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return true
		}
	}
	return false
}

// Constants for testing 8 bytes at a time.
const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// AppendIndent appends data indented as json.Indent(dst, data, "", indent)
// does. It checks data as it indents it, in one pass, and returns dst
// unchanged and false when data is not one JSON value with optional white
// space around it (what Valid reports): rendering runs it on every JSON
// block of every step.
func AppendIndent(dst, data []byte, indent string) ([]byte, bool) {
	n := len(dst)
	i := space(data, 0)
	out, i, ok := indentValue(dst, data, i, 0, indent)
	if !ok || space(data, i) != len(data) {
		return dst[:n], false
	}
	return append(out, data[i:]...), true // as json.Indent, keep what follows
}

// indentValue is validValue that appends the value at data[i:] to dst,
// indented as json.Indent does at nesting depth.
func indentValue(dst, data []byte, i, depth int, indent string) ([]byte, int, bool) {
	if i >= len(data) {
		return dst, i, false
	}
	var ok bool
	switch c := data[i]; {
	case c == '{':
		if depth+1 > maxDepth {
			return dst, i, false
		}
		dst = append(dst, '{')
		if i = space(data, i+1); i < len(data) && data[i] == '}' {
			return append(dst, '}'), i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return dst, i, false
			}
			dst = newline(dst, indent, depth+1)
			start := i
			if i, ok = validString(data, i); !ok {
				return dst, i, false
			}
			dst = append(dst, data[start:i]...)
			if i = space(data, i); i >= len(data) || data[i] != ':' {
				return dst, i, false
			}
			dst = append(dst, ':', ' ')
			if dst, i, ok = indentValue(dst, data, space(data, i+1), depth+1, indent); !ok {
				return dst, i, false
			}
			if i = space(data, i); i >= len(data) {
				return dst, i, false
			}
			switch data[i] {
			case '}':
				return append(newline(dst, indent, depth), '}'), i + 1, true
			case ',':
				dst = append(dst, ',')
				i = space(data, i+1)
			default:
				return dst, i, false
			}
		}
	case c == '[':
		if depth+1 > maxDepth {
			return dst, i, false
		}
		dst = append(dst, '[')
		if i = space(data, i+1); i < len(data) && data[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			dst = newline(dst, indent, depth+1)
			if dst, i, ok = indentValue(dst, data, i, depth+1, indent); !ok {
				return dst, i, false
			}
			if i = space(data, i); i >= len(data) {
				return dst, i, false
			}
			switch data[i] {
			case ']':
				return append(newline(dst, indent, depth), ']'), i + 1, true
			case ',':
				dst = append(dst, ',')
				i = space(data, i+1)
			default:
				return dst, i, false
			}
		}
	case c == '"':
		end, ok := validString(data, i)
		if !ok {
			return dst, end, false
		}
		return append(dst, data[i:end]...), end, true
	}
	end, ok := validValue(data, i, depth) // a scalar
	if !ok {
		return dst, end, false
	}
	return append(dst, data[i:end]...), end, true
}

// newline appends a line break and depth indents.
func newline(dst []byte, indent string, depth int) []byte {
	if n := 1 + depth*len(indent); indent == "  " && n <= len(spaced) {
		return append(dst, spaced[:n]...)
	}
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, indent...)
	}
	return dst
}

// spaced is a line break and the indents of two spaces of the usual
// depths, the indent rendering uses.
const spaced = "\n                                                                "
