package ref

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path is a dot path inside a data value: each element is an object key or,
// when the value at that point is an array, a decimal index. The empty Path
// is the whole value.
type Path []string

// ParsePath parses a dot path such as "user.address.0.city". The empty
// string is the root. Segments may hold any character but '.', white space,
// '|', '&', '"', '\\' and the dagger.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, nil
	}
	p, n := scanPath(s, 0, nil)
	if n != len(s) {
		return nil, syntaxErr(s, n, "unexpected %q in path", rest(s, n))
	}
	for i, seg := range p {
		if seg == "" {
			return nil, syntaxErr(s, segOffset(p, i), "empty path segment")
		}
	}
	return p, nil
}

// String returns the dot form of p.
func (p Path) String() string { return strings.Join(p, ".") }

// HasPrefix reports whether q is a prefix of p (q ⊑ p).
func (p Path) HasPrefix(q Path) bool {
	if len(q) > len(p) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// Related reports whether one of p and q is a prefix of the other: a write
// at one may change the value read at the other.
func (p Path) Related(q Path) bool {
	if len(p) < len(q) {
		return q.HasPrefix(p)
	}
	return p.HasPrefix(q)
}

// index returns seg as an array index when it is a canonical decimal.
func index(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(seg)
	return n, true
}

// scanPath reads dot-separated segments of s from offset i until a
// character that cannot be in a path. It returns the segments (possibly
// empty strings, which callers reject) and the offset after them. The
// segments go into buf while they fit; the path returned has no room to
// grow into, so that appending to it cannot write into buf.
func scanPath(s string, i int, buf []string) (Path, int) {
	p := Path(buf[:0])
	start := i
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '.' {
			p = append(p, s[start:i])
			i += size
			start = i
			continue
		}
		if !segmentRune(r) {
			break
		}
		i += size
	}
	p = append(p, s[start:i])
	return p[:len(p):len(p)], i
}

func segmentRune(r rune) bool {
	switch r {
	case '.', '|', '&', '"', '\\', dagger, utf8.RuneError:
		return false
	}
	return !unicode.IsSpace(r) && !unicode.IsControl(r)
}

func segOffset(p Path, i int) int {
	n := 0
	for _, s := range p[:i] {
		n += len(s) + 1
	}
	return n
}

func rest(s string, i int) string {
	if i >= len(s) {
		return ""
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return string(r)
}
