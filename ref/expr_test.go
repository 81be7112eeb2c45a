package ref

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want [][]string // alternatives of references in canonical form
		err  string     // substring of the error
	}{
		{in: "†input.userName", want: [][]string{{"†input.userName"}}},
		{in: "†state", want: [][]string{{"†state"}}},
		{in: "†state.items.0.name", want: [][]string{{"†state.items.0.name"}}},
		{in: "†input.optionalData || †state.defaultData", want: [][]string{{"†input.optionalData"}, {"†state.defaultData"}}},
		{in: "†state.userProfile && †state.permissions", want: [][]string{{"†state.userProfile", "†state.permissions"}}},
		{in: "†a.x && †b.y || †c", want: [][]string{{"†a.x", "†b.y"}, {"†c"}}},
		{in: "†a || †b && †c", want: [][]string{{"†a"}, {"†b", "†c"}}},
		{in: "  †a.x||†b.y  ", want: [][]string{{"†a.x"}, {"†b.y"}}},
		{in: "†data.user-name.first_name", want: [][]string{{"†data.user-name.first_name"}}},
		{in: "†state.ünïcode.键", want: [][]string{{"†state.ünïcode.键"}}},
		{in: "", err: "empty expression"},
		{in: "state.x", err: "expected a reference"},
		{in: "†", err: "missing kind"},
		{in: "†.x", err: "missing kind"},
		{in: "†state.", err: "empty path segment"},
		{in: "†state..x", err: "empty path segment"},
		{in: "†state.x ||", err: "missing reference after operator"},
		{in: "†state.x | †y", err: "expected && or ||"},
		{in: "†state.x †y", err: "expected && or ||"},
		{in: "†state.x†y", err: "expected && or || between references"},
		{in: "†state.x\"", err: "unexpected"},
		{in: "†sta!te", err: "unexpected \"!\""},
	} {
		t.Run(tt.in, func(t *testing.T) {
			e, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrSyntax) {
					t.Fatalf("Parse(%q) = %v, %v; want error containing %q", tt.in, e, err, tt.err)
				}
				var re *Error
				if !errors.As(err, &re) || re.Offset < 0 || re.Offset > len(tt.in) {
					t.Fatalf("error %v has no offset within the input", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			var got [][]string
			for _, g := range e.Alts {
				var refs []string
				for _, r := range g {
					refs = append(refs, r.String())
					if !strings.HasPrefix(tt.in[r.Offset:], Dagger) {
						t.Errorf("offset %d of %s does not point at a dagger", r.Offset, r)
					}
				}
				got = append(got, refs)
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("Parse(%q) (-got +want):\n%s", tt.in, d)
			}
		})
	}
}

func TestLiteral(t *testing.T) {
	for _, tt := range []struct {
		param   string
		isExpr  bool
		literal string
	}{
		{"†state.x", true, ""},
		{"††state.x", false, "†state.x"},
		{"†††x", false, "††x"},
		{"plain †state.x", false, "plain †state.x"},
		{"", false, ""},
	} {
		if got := IsExpression(tt.param); got != tt.isExpr {
			t.Errorf("IsExpression(%q) = %v", tt.param, got)
		}
		if !tt.isExpr {
			if got := Literal(tt.param); got != tt.literal {
				t.Errorf("Literal(%q) = %q, want %q", tt.param, got, tt.literal)
			}
			if got := Literal(Escape(tt.literal)); got != tt.literal {
				t.Errorf("Literal(Escape(%q)) = %q", tt.literal, got)
			}
		}
	}
}

func TestParsePath(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Path
		err  bool
	}{
		{"", nil, false},
		{"a", Path{"a"}, false},
		{"a.0.b", Path{"a", "0", "b"}, false},
		{"a..b", nil, true},
		{".a", nil, true},
		{"a b", nil, true},
	} {
		got, err := ParsePath(tt.in)
		if (err != nil) != tt.err || !tt.err && !cmp.Equal(got, tt.want) {
			t.Errorf("ParsePath(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// FuzzParseExpression checks that parsing never panics, that errors carry
// an offset inside the input, and that the canonical form of a parsed
// expression parses to the same references.
func FuzzParseExpression(f *testing.F) {
	for _, s := range []string{"†input.userName", "†a.x && †b.y || †c", "†state..x", "†", "†a||", "††x", "†a.0.b-c_d", "†a.键 && †b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var re *Error
			if !errors.As(err, &re) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q): error %v is not a syntax *Error", s, err)
			}
			if re.Offset < 0 || re.Offset > len(s) {
				t.Fatalf("Parse(%q): offset %d outside the input", s, re.Offset)
			}
			return
		}
		if len(e.Alts) == 0 {
			t.Fatalf("Parse(%q) gave no alternatives", s)
		}
		e2, err := Parse(e.String())
		if err != nil {
			t.Fatalf("canonical %q of %q does not parse: %v", e.String(), s, err)
		}
		if e2.String() != e.String() {
			t.Fatalf("canonical form not stable: %q → %q", e.String(), e2.String())
		}
		for _, r := range e.Refs() {
			if !strings.HasPrefix(s[r.Offset:], Dagger) {
				t.Fatalf("Parse(%q): offset %d of %s does not point at a dagger", s, r.Offset, r)
			}
			if !KindValid(r.Kind) {
				t.Fatalf("Parse(%q): invalid kind %q", s, r.Kind)
			}
		}
	})
}

// TestParseOneBlock checks that a single reference parses in one
// allocation, and that the paths parsed share no room to grow into.
func TestParseOneBlock(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = Parse("†state.r3.y") }); n != 1 {
		t.Errorf("Parse of one reference: %v allocations, want 1", n)
	}
	for _, s := range []string{"†a.b.c", "†a.b && †c.d.e", "†a.b.c.d.e.f || †g", "†a || †b.c"} {
		e, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		want := e.String()
		for _, r := range e.Refs() {
			_ = append(r.Path, "clobbered")
		}
		if got := e.String(); got != want {
			t.Errorf("appending to the paths of %q changed it to %q", want, got)
		}
	}
}

// FuzzWriteQuoted checks writeQuoted against strconv.Quote.
func FuzzWriteQuoted(f *testing.F) {
	for _, s := range []string{"", "†state.a", `a"b`, `a\b`, "\x00", "\xff", "\uFFFD", "é\u2028", "\u00ad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		writeQuoted(&b, s)
		if got, want := b.String(), strconv.Quote(s); got != want {
			t.Fatalf("writeQuoted(%q) = %s, want %s", s, got, want)
		}
	})
}
