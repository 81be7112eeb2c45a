package flatjson

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestScanStringUTF8 checks the scan against encoding/json and utf8.Valid
// on strings built from the bytes that matter.
func TestScanStringUTF8(t *testing.T) {
	alphabet := []string{"a", "Z", " ", `\"`, `\\`, `\n`, `\u00e9`, `\u12`, "\\", "\x01", "é", "†", "€", "𝄞", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf"}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		s := "\""
		for range r.IntN(24) { // past 8 bytes: the scan reads words
			s += alphabet[r.IntN(len(alphabet))]
		}
		if r.IntN(8) > 0 {
			s += "\""
		}
		body, esc, valid, end, ok := ScanStringUTF8([]byte(s), 0)
		var v string
		if !ok {
			for k := 2; k <= len(s); k++ { // no prefix is a whole string
				if json.Unmarshal([]byte(s[:k]), &v) == nil {
					t.Fatalf("%q: not ok, but %q is a string", s, s[:k])
				}
			}
			continue
		}
		if json.Unmarshal([]byte(s[:end]), &v) != nil || string(body) != s[1:end-1] {
			t.Fatalf("%q: body %q end %d", s, body, end)
		}
		// What follows the string does not change it.
		if b2, e2, v2, end2, ok2 := ScanStringUTF8([]byte(s+`,"k":"\\é"}`), 0); !ok2 || string(b2) != string(body) || e2 != esc || v2 != valid || end2 != end {
			t.Fatalf("%q with more after it: %q %v %v %d %v", s, b2, e2, v2, end2, ok2)
		}
		if valid != utf8.Valid(body) {
			t.Fatalf("%q: valid = %v", s, valid)
		}
		if esc != containsByte(body, '\\') {
			t.Fatalf("%q: esc = %v", s, esc)
		}
	}
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// TestDecodeSkipMeta checks that skipping meta-properties decodes as if
// they were removed first, whatever their values hold.
func TestDecodeSkipMeta(t *testing.T) {
	type params struct {
		X int    `json:"x"`
		S string `json:"s,omitempty"`
	}
	d := New(reflect.TypeFor[params]())
	if d == nil {
		t.Fatal("no decoder")
	}
	metas := []string{`"_tool":"t"`, `"_outputPath":"†state.a"`, `"_o":{"a":[1,{"b":"}"}]}`, `"_e":"q\"}"`, `"_n":null`, `"_a" : [ ]`}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		var with, without []string
		for _, p := range []string{`"x":3`, `"s":"v,}"`} {
			if rng.IntN(3) > 0 {
				with, without = append(with, p), append(without, p)
			}
			if rng.IntN(2) == 0 {
				with = append(with, metas[rng.IntN(len(metas))])
			}
		}
		a, b := "{"+strings.Join(with, ",")+"}", "{"+strings.Join(without, ",")+"}"
		var got, want params
		okGot := d.Decode([]byte(a), reflect.ValueOf(&got).Elem(), true)
		okWant := d.Decode([]byte(b), reflect.ValueOf(&want).Elem(), false)
		if okGot != okWant || got != want {
			t.Fatalf("%s with meta-properties skipped: %v %+v; %s: %v %+v", a, okGot, got, b, okWant, want)
		}
	}
}
