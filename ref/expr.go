package ref

import (
	"strings"
	"unicode/utf8"
)

const (
	dagger = '†'
	// Dagger is the prefix of every reference.
	Dagger = "†"
)

// Ref is one reference †Kind.Path inside an expression.
type Ref struct {
	Kind   string
	Path   Path
	Offset int // byte offset of the dagger in the expression text
}

// String returns the reference as written, in canonical spacing.
func (r Ref) String() string {
	if len(r.Path) == 0 {
		return Dagger + r.Kind
	}
	return Dagger + r.Kind + "." + r.Path.String()
}

// Group is a conjunction of references joined by &&.
type Group []Ref

// Expr is a parsed expression: alternatives joined by ||, each a [Group].
// As an input it yields the first alternative whose references all resolve,
// with the value of that group's last reference. As an output path each
// alternative is a branch and each reference of the chosen branch a target.
type Expr struct {
	Text string
	Alts []Group
}

// String returns the expression in canonical spacing.
func (e Expr) String() string {
	var b strings.Builder
	for i, g := range e.Alts {
		if i > 0 {
			b.WriteString(" || ")
		}
		for j, r := range g {
			if j > 0 {
				b.WriteString(" && ")
			}
			b.WriteString(r.String())
		}
	}
	return b.String()
}

// Refs returns every reference of e in order of appearance.
func (e Expr) Refs() []Ref {
	var out []Ref
	for _, g := range e.Alts {
		out = append(out, g...)
	}
	return out
}

// IsExpression reports whether the string parameter s is an expression
// rather than a literal: it starts with one dagger, not two.
func IsExpression(s string) bool {
	return strings.HasPrefix(s, Dagger) && !strings.HasPrefix(s, Dagger+Dagger)
}

// Literal returns the value of a string parameter that is not an expression:
// a leading "††" stands for a single dagger; every other string is itself.
func Literal(s string) string {
	if strings.HasPrefix(s, Dagger+Dagger) {
		return s[len(Dagger):]
	}
	return s
}

// Escape returns the parameter spelling of the literal string s, doubling a
// leading dagger so that s is not read as an expression.
func Escape(s string) string {
	if strings.HasPrefix(s, Dagger) {
		return Dagger + s
	}
	return s
}

// Parse parses an expression. Spaces may surround the operators; each
// operand is a reference †kind or †kind.path, where kind is a non-empty run of
// letters, digits, '_' and '-'.
func Parse(s string) (Expr, error) {
	e := Expr{Text: s}
	i := skipSpace(s, 0)
	if i == len(s) {
		return Expr{}, syntaxErr(s, i, "empty expression")
	}
	// The first reference is read into a block that holds the whole
	// expression when it is the only one, as it mostly is: then parsing
	// takes one allocation.
	one := &struct {
		alts [1]Group
		refs [1]Ref
		segs [4]string
	}{}
	var g Group
	for {
		var segs []string
		if len(e.Alts) == 0 && len(g) == 0 {
			segs = one.segs[:0]
		}
		r, n, err := parseRef(s, i, segs)
		if err != nil {
			return Expr{}, err
		}
		if i = skipSpace(s, n); i == len(s) && len(e.Alts) == 0 && len(g) == 0 {
			one.refs[0] = r
			one.alts[0] = one.refs[:]
			e.Alts = one.alts[:]
			return e, nil
		}
		g = append(g, r)
		switch {
		case i == len(s):
			e.Alts = append(e.Alts, g)
			return e, nil
		case strings.HasPrefix(s[i:], "&&"):
			i = skipSpace(s, i+2)
		case strings.HasPrefix(s[i:], "||"):
			e.Alts = append(e.Alts, g)
			g = nil
			i = skipSpace(s, i+2)
		default:
			return Expr{}, syntaxErr(s, i, "expected && or || but found %q", rest(s, i))
		}
	}
}

// parseRef reads the reference at s[i:], its path into segs when it fits.
func parseRef(s string, i int, segs []string) (Ref, int, error) {
	if !strings.HasPrefix(s[i:], Dagger) {
		if i == len(s) {
			return Ref{}, i, syntaxErr(s, i, "missing reference after operator")
		}
		return Ref{}, i, syntaxErr(s, i, "expected a reference starting with † but found %q", rest(s, i))
	}
	r := Ref{Offset: i}
	j := i + len(Dagger)
	k := j
	for k < len(s) && kindByte(s[k]) {
		k++
	}
	if k == j {
		return Ref{}, j, syntaxErr(s, j, "missing kind after †")
	}
	r.Kind = s[j:k]
	if k < len(s) && s[k] == '.' {
		p, n := scanPath(s, k+1, segs)
		for idx, seg := range p {
			if seg == "" {
				return Ref{}, k + 1 + segOffset(p, idx), syntaxErr(s, k+1+segOffset(p, idx), "empty path segment")
			}
		}
		r.Path, k = p, n
	}
	if k < len(s) && !spaceByte(s[k]) && s[k] != '|' && s[k] != '&' {
		if c, _ := utf8.DecodeRuneInString(s[k:]); c == dagger {
			return Ref{}, k, syntaxErr(s, k, "expected && or || between references")
		}
		return Ref{}, k, syntaxErr(s, k, "unexpected %q in reference", rest(s, k))
	}
	return r, k, nil
}

// KindValid reports whether k can be named by a reference.
func KindValid(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !kindByte(k[i]) {
			return false
		}
	}
	return true
}

func kindByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func skipSpace(s string, i int) int {
	for i < len(s) && spaceByte(s[i]) {
		i++
	}
	return i
}

func spaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
