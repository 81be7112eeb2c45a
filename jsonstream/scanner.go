package jsonstream

import (
	"encoding/binary"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// kind is the kind of a token found by the scanner.
type kind uint8

const (
	kNone kind = iota // no token: the chunk ended between tokens
	kBeginObject
	kEndObject
	kBeginArray
	kEndArray
	kKey    // an object key (a string)
	kString // a string value
	kNumber
	kTrue
	kFalse
	kNull
	kEOF // the input ended after a complete value; returned by end only

	// kPartial is or-ed into a kind when the chunk ended inside the token:
	// the scanner keeps its state and the token continues in the next chunk.
	kPartial kind = 0x80
)

// What the scanner expects between tokens.
const (
	wValue      uint8 = iota // a value: at the start, after ':', after ',' in an array
	wValueOrEnd              // a value or ']': after '['
	wKeyOrEnd                // a key or '}': after '{'
	wKey                     // a key: after ',' in an object
	wColon                   // ':' after a key
	wCommaOrEnd              // ',' or the closing delimiter after a member
	wDone                    // nothing but white space (and a closing fence)
)

// Where the scanner is inside a token (or a code fence) that a chunk
// boundary cut; sNone between tokens.
const (
	sNone   uint8 = iota
	sString       // in a string
	sEscape       // after a backslash in a string
	sU1           // expecting the 1st hex digit of \uXXXX; sU2..sU4 follow
	sU2
	sU3
	sU4
	sMinus   // after a leading '-'
	sZero    // after a leading '0'
	sInt     // in the integer digits
	sDot     // after '.'
	sFrac    // in the fraction digits
	sExpMark // after 'e' or 'E'
	sExpSign // after the exponent sign
	sExp     // in the exponent digits
	sLiteral // in true, false or null
	sFenceOpen
	sFenceInfo
	sFenceClose
)

// Code fence states.
const (
	fenceNone uint8 = iota
	fenceOpen
	fenceClosed
)

// frame is one open object or array.
type frame struct {
	obj      bool // object, else array
	on       bool // Extractor: this container lies on the extraction path
	match    bool // Extractor: the current member matches the next path segment
	target   bool // Extractor: this array's elements are extracted
	index    int  // arrays: index of the current element, -1 before the first
	keyStart int  // objects: the current key, quotes included, is keys[keyStart:keyEnd]
	keyEnd   int
}

// scanner is a resumable, validating JSON lexer. It is fed one chunk at a
// time and never looks at a byte twice: when a chunk ends inside a token it
// records where it is (st, lit, ...) and resumes there with the next chunk.
// It tracks the open containers and their current keys and indexes, so it
// can check delimiters and report the path of every token.
//
// The zero scanner is ready for use.
type scanner struct {
	off   int64 // offset in the input of p[0]; set by the owner before each call
	st    uint8 // position inside a cut token, sNone between tokens
	want  uint8 // what may come next between tokens
	tok   kind  // kind of the token in progress when st != sNone
	lit   string
	litN  int // bytes of lit matched so far
	ticks int // backticks of a fence seen so far
	fence uint8
	stack []frame
	// keys holds the raw current key of each open object, in stack order,
	// then the part read so far of a key that a chunk boundary cut.
	keys []byte
}

// Constants for testing 8 bytes at a time.
const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// plain[c] reports whether c stands for itself inside a JSON string.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// next scans p from index i for the next token. It returns the token's kind,
// the index of its first byte in p (or i when the token began in an earlier
// chunk) and the index after its last byte. Commas, colons, white space and
// code fences are consumed but are not tokens. When p ends inside a token,
// the kind has kPartial set and end is len(p); when it ends between tokens,
// next returns kNone.
func (s *scanner) next(p []byte, i int) (kind, int, int, error) {
	if s.st != sNone {
		// Continue the token that the previous chunk cut.
		switch {
		case s.st <= sU4:
			return s.scanString(p, i, i, s.st)
		case s.st <= sExp:
			return s.scanNumber(p, i, i, s.st)
		case s.st == sLiteral:
			return s.scanLiteral(p, i, i)
		}
		var err error
		if i, err = s.scanFence(p, i); err != nil || s.st != sNone {
			return kNone, i, i, err
		}
	}
	for ; i < len(p); i++ {
		c := p[i]
		if c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
			continue
		}
		switch s.want {
		case wCommaOrEnd:
			top := &s.stack[len(s.stack)-1]
			switch {
			case c == ',':
				if top.obj {
					s.want = wKey
				} else {
					s.want = wValue
				}
				continue
			case c == '}' && top.obj:
				s.pop()
				return kEndObject, i, i + 1, nil
			case c == ']' && !top.obj:
				s.pop()
				return kEndArray, i, i + 1, nil
			}
			if top.obj {
				return kNone, i, i, s.errAt(i, c, "after object key:value pair")
			}
			return kNone, i, i, s.errAt(i, c, "after array element")
		case wColon:
			if c == ':' {
				s.want = wValue
				continue
			}
			return kNone, i, i, s.errAt(i, c, "after object key")
		case wKey, wKeyOrEnd:
			if c == '"' {
				s.tok = kKey
				return s.scanString(p, i, i+1, sString)
			}
			if c == '}' && s.want == wKeyOrEnd {
				s.pop()
				return kEndObject, i, i + 1, nil
			}
			return kNone, i, i, s.errAt(i, c, "looking for beginning of object key string")
		case wValue, wValueOrEnd:
			switch {
			case c == '"':
				s.beginValue()
				s.tok = kString
				return s.scanString(p, i, i+1, sString)
			case c == '{':
				s.beginValue()
				s.stack = append(s.stack, frame{obj: true, index: -1, keyStart: len(s.keys), keyEnd: len(s.keys)})
				s.want = wKeyOrEnd
				return kBeginObject, i, i + 1, nil
			case c == '[':
				s.beginValue()
				s.stack = append(s.stack, frame{index: -1, keyStart: len(s.keys), keyEnd: len(s.keys)})
				s.want = wValueOrEnd
				return kBeginArray, i, i + 1, nil
			case c == ']' && s.want == wValueOrEnd:
				s.pop()
				return kEndArray, i, i + 1, nil
			case c == '-':
				s.beginValue()
				s.tok = kNumber
				return s.scanNumber(p, i, i+1, sMinus)
			case c == '0':
				s.beginValue()
				s.tok = kNumber
				return s.scanNumber(p, i, i+1, sZero)
			case '1' <= c && c <= '9':
				s.beginValue()
				s.tok = kNumber
				return s.scanNumber(p, i, i+1, sInt)
			case c == 't':
				s.beginValue()
				s.tok, s.lit, s.litN = kTrue, "true", 1
				return s.scanLiteral(p, i, i+1)
			case c == 'f':
				s.beginValue()
				s.tok, s.lit, s.litN = kFalse, "false", 1
				return s.scanLiteral(p, i, i+1)
			case c == 'n':
				s.beginValue()
				s.tok, s.lit, s.litN = kNull, "null", 1
				return s.scanLiteral(p, i, i+1)
			case c == '`' && len(s.stack) == 0 && s.fence == fenceNone:
				s.st, s.ticks = sFenceOpen, 0
				var err error
				if i, err = s.scanFence(p, i); err != nil || s.st != sNone {
					return kNone, i, i, err
				}
				i-- // the loop's i++ must not skip the byte after the fence
				continue
			}
			return kNone, i, i, s.errAt(i, c, "looking for beginning of value")
		case wDone:
			if c == '`' && s.fence == fenceOpen {
				s.st, s.ticks = sFenceClose, 0
				var err error
				if i, err = s.scanFence(p, i); err != nil || s.st != sNone {
					return kNone, i, i, err
				}
				i--
				continue
			}
			return kNone, i, i, s.errAt(i, c, "after top-level value")
		}
	}
	return kNone, i, i, nil
}

// skip scans p from index i until the stack is depth containers deep
// again after a complete token: the end of the value that began at that
// depth. It returns the index after that token and true, or len(p) and
// false when p ends first.
func (s *scanner) skip(p []byte, i, depth int) (int, bool, error) {
	for {
		k, _, end, err := s.next(p, i)
		if err != nil {
			return end, false, err
		}
		if k == kNone || k&kPartial != 0 {
			return len(p), false, nil
		}
		if len(s.stack) == depth {
			return end, true, nil
		}
		i = end
	}
}

// beginValue notes that a value starts in the innermost container.
func (s *scanner) beginValue() {
	if n := len(s.stack); n > 0 && !s.stack[n-1].obj {
		s.stack[n-1].index++
	}
}

// endValue notes that a value ended.
func (s *scanner) endValue() {
	if len(s.stack) == 0 {
		s.want = wDone
	} else {
		s.want = wCommaOrEnd
	}
}

// pop closes the innermost container.
func (s *scanner) pop() {
	n := len(s.stack) - 1
	s.keys = s.keys[:s.stack[n].keyStart]
	s.stack = s.stack[:n]
	s.endValue()
}

// scanString scans a string (value or key) whose opening quote is at start,
// from index i in state st.
func (s *scanner) scanString(p []byte, start, i int, st uint8) (kind, int, int, error) {
	for i < len(p) {
		switch st {
		case sString:
			// Skip the bytes that stand for themselves, 8 at a time: the
			// high bit of a byte of m is set for the first byte that is
			// below 0x20, '"' or '\\' (and maybe for later ones).
			for ; i+8 <= len(p); i += 8 {
				v := binary.LittleEndian.Uint64(p[i:])
				q, b := v^ones*'"', v^ones*'\\'
				if m := ((v-ones*0x20)&^v | (q-ones)&^q | (b-ones)&^b) & high; m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
			}
			for ; i < len(p); i++ {
				if !plain[p[i]] {
					break
				}
			}
			if i == len(p) {
				continue // ends the outer loop
			}
			switch c := p[i]; c {
			case '"':
				i++
				s.st = sNone
				if s.tok == kKey {
					top := &s.stack[len(s.stack)-1]
					if len(s.keys) == top.keyEnd {
						s.keys = s.keys[:top.keyStart]
						s.keys = append(s.keys, p[start:i]...)
					} else {
						// The key began in an earlier chunk: its first
						// part went after the previous key, which stayed
						// valid until now. Move it into place.
						s.keys = append(s.keys, p[start:i]...)
						n := copy(s.keys[top.keyStart:], s.keys[top.keyEnd:])
						s.keys = s.keys[:top.keyStart+n]
					}
					top.keyEnd = len(s.keys)
					s.want = wColon
				} else {
					s.endValue()
				}
				return s.tok, start, i, nil
			case '\\':
				st = sEscape
			default:
				s.st = st
				return kNone, i, i, s.errAt(i, c, "in string literal")
			}
		case sEscape:
			switch p[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				st = sString
			case 'u':
				st = sU1
			default:
				s.st = st
				return kNone, i, i, s.errAt(i, p[i], "in string escape code")
			}
		default: // sU1..sU4
			if c := p[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				s.st = st
				return kNone, i, i, s.errAt(i, c, `in \u hexadecimal character escape`)
			}
			if st == sU4 {
				st = sString
			} else {
				st++
			}
		}
		i++
	}
	s.st = st
	if s.tok == kKey {
		s.keys = append(s.keys, p[start:]...)
	}
	return s.tok | kPartial, start, len(p), nil
}

// scanNumber scans a number that began at start, from index i in state st.
func (s *scanner) scanNumber(p []byte, start, i int, st uint8) (kind, int, int, error) {
	for ; i < len(p); i++ {
		c := p[i]
		switch st {
		case sMinus:
			switch {
			case c == '0':
				st = sZero
			case '1' <= c && c <= '9':
				st = sInt
			default:
				s.st = st
				return kNone, i, i, s.errAt(i, c, "in numeric literal")
			}
		case sInt:
			for ; i < len(p); i++ {
				if c = p[i]; c < '0' || c > '9' {
					break
				}
			}
			if i == len(p) {
				continue
			}
			fallthrough
		case sZero:
			switch c {
			case '.':
				st = sDot
			case 'e', 'E':
				st = sExpMark
			default:
				return s.numberDone(start, i)
			}
		case sDot:
			if c < '0' || c > '9' {
				s.st = st
				return kNone, i, i, s.errAt(i, c, "after decimal point in numeric literal")
			}
			st = sFrac
		case sFrac:
			switch {
			case '0' <= c && c <= '9':
			case c == 'e' || c == 'E':
				st = sExpMark
			default:
				return s.numberDone(start, i)
			}
		case sExpMark:
			switch {
			case c == '+' || c == '-':
				st = sExpSign
			case '0' <= c && c <= '9':
				st = sExp
			default:
				s.st = st
				return kNone, i, i, s.errAt(i, c, "in exponent of numeric literal")
			}
		case sExpSign:
			if c < '0' || c > '9' {
				s.st = st
				return kNone, i, i, s.errAt(i, c, "in exponent of numeric literal")
			}
			st = sExp
		case sExp:
			if c < '0' || c > '9' {
				return s.numberDone(start, i)
			}
		}
	}
	s.st = st
	return kNumber | kPartial, start, len(p), nil
}

func (s *scanner) numberDone(start, end int) (kind, int, int, error) {
	s.st = sNone
	s.endValue()
	return kNumber, start, end, nil
}

// scanLiteral scans true, false or null, from index i.
func (s *scanner) scanLiteral(p []byte, start, i int) (kind, int, int, error) {
	for ; i < len(p); i++ {
		if p[i] != s.lit[s.litN] {
			s.st = sLiteral
			return kNone, i, i, s.errAt(i, p[i], "in literal "+s.lit+" (expecting "+quoteChar(s.lit[s.litN])+")")
		}
		s.litN++
		if s.litN == len(s.lit) {
			s.st = sNone
			s.endValue()
			return s.tok, start, i + 1, nil
		}
	}
	s.st = sLiteral
	return s.tok | kPartial, start, len(p), nil
}

// scanFence scans a Markdown code fence from index i: "```" and an info
// string up to a newline when opening, "```" when closing. It returns the
// index after what it consumed, with s.st == sNone when the fence is done.
func (s *scanner) scanFence(p []byte, i int) (int, error) {
	for ; i < len(p); i++ {
		c := p[i]
		switch s.st {
		case sFenceOpen, sFenceClose:
			if c != '`' {
				return i, s.errAt(i, c, "in code fence (expecting '`')")
			}
			if s.ticks++; s.ticks < 3 {
				continue
			}
			if s.st == sFenceClose {
				s.st, s.fence = sNone, fenceClosed
				return i + 1, nil
			}
			s.st = sFenceInfo
		case sFenceInfo:
			switch c {
			case '\n':
				s.st, s.fence = sNone, fenceOpen
				return i + 1, nil
			case '`':
				return i, s.errAt(i, c, "in code fence info string")
			}
		}
	}
	return i, nil
}

// end is called when the input has ended and every chunk was scanned up to
// kNone or a partial token. It completes a top-level number cut by the end
// (returning kNumber), or returns kEOF when the value is complete, or an
// error.
func (s *scanner) end() (kind, error) {
	switch s.st {
	case sZero, sInt, sFrac, sExp:
		// Only a top-level number can end the input; inside a container
		// it may have been cut short.
		if len(s.stack) == 0 {
			s.st, s.want = sNone, wDone
			return kNumber, nil
		}
	case sNone:
		if s.want == wDone {
			return kEOF, nil
		}
	}
	return kNone, &SyntaxError{Offset: s.off, Path: s.errPath(), Msg: "unexpected end of JSON input", Err: io.ErrUnexpectedEOF}
}

// errAt returns the error for the unexpected byte c at index i.
func (s *scanner) errAt(i int, c byte, context string) error {
	return &SyntaxError{Offset: s.off + int64(i), Path: s.errPath(), Msg: "invalid character " + quoteChar(c) + " " + context}
}

// errPath returns the path of the value being read, or of the innermost
// object while a key is expected or read.
func (s *scanner) errPath() string {
	n := len(s.stack)
	if n == 0 {
		return ""
	}
	var b []byte
	b = s.appendPath(b, s.stack[:n-1])
	top := &s.stack[n-1]
	inKey := s.want == wKey || s.want == wKeyOrEnd
	switch {
	case top.obj && !inKey:
		b = appendSeg(b, s.key(top))
	case !top.obj && s.st == sNone && (s.want == wValue || s.want == wValueOrEnd):
		// between elements: the next one is being looked for
		b = appendSeg(b, strconv.Itoa(top.index+1))
	case !top.obj:
		b = appendSeg(b, strconv.Itoa(top.index))
	}
	return string(b)
}

// appendPath appends the dot path made of the current member of each frame.
func (s *scanner) appendPath(b []byte, frames []frame) []byte {
	for i := range frames {
		f := &frames[i]
		if f.obj {
			b = appendSeg(b, s.key(f))
		} else {
			b = appendSeg(b, strconv.Itoa(f.index))
		}
	}
	return b
}

// key returns the decoded current key of the object f.
func (s *scanner) key(f *frame) string {
	if f.keyEnd-f.keyStart < 2 {
		return ""
	}
	return unquote(s.keys[f.keyStart+1 : f.keyEnd-1])
}

func appendSeg(b []byte, seg string) []byte {
	if len(b) > 0 {
		b = append(b, '.')
	}
	return append(b, seg...)
}

// unquote decodes the body of a valid JSON string (without its quotes)
// exactly as encoding/json does: invalid UTF-8 and unpaired surrogates
// become U+FFFD.
func unquote(s []byte) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	if i == len(s) {
		return string(s)
	}
	var b strings.Builder
	b.Grow(len(s) + 2*utf8.UTFMax)
	b.Write(s[:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			i++
			switch s[i] {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(s[i+1:])
				i += 5
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:])); dec != unicode.ReplacementChar {
							b.WriteRune(dec)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
				continue
			default: // '"', '\\', '/'
				b.WriteByte(s[i])
			}
			i++
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			b.WriteRune(r)
			i += size
		}
	}
	return b.String()
}

// hex4 decodes the four hex digits at the start of s, known to be valid.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
