package jsonfast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{ }`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`,
	`1e5`, `1E+5`, `1e-5`, `1e`, `.5`, `-.5`, `"a"`, `"a`, `"\u00e9"`, `"\u00g9"`, `"\x"`, "\"\t\"", `"\/"`, "\"\xff\"",
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `{"a":[1,{"b":null}],"c":"d"}`,
	`{"a":1}}`, `[1]]`, `1 2`, `{"a":1} x`, "\n[1]\n", `[-1.5e+10,true,false,null,"x"]`, `{"":""}`,
	// Strings long enough to be read 8 bytes at a time.
	`"abcdefgh\"ijklmnop"`, `"abcdefghijklmnop\u0041qrs"`, "\"abcdefghij\x01klm\"", `"0123456789012345"`, `"abcdefghijklmnopq`,
	`{"abcdefghijklmn":"opqrstuvwxyz0123456789"}`, "\"abcdefgh†ijklmnopqr\"", "\"abcdefgh\x7fijkl\\\\mnopqr\"",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestValid(t *testing.T) {
	for _, s := range validCases {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.40q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range validCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	})
}

func FuzzCompactArray(f *testing.F) {
	f.Add(`{"a":1}`, `[1, 2]`, `"<b>"`)
	f.Add(`{}`, `x`, "\"\u2028\"")
	f.Add(`1`, `"a b"`, `null`)
	f.Add("\"\u2029\"", "\"\u20ac\"", "\"\u2027\"")
	f.Add(`{"_tool":"t0","x":0,"_outputPath":"†state.r0"}`, `{"text":"0123456789<"}`, "\"0123456789abcdef\u2028\"")
	f.Add(`["abcdefgh", "ijklmnop"]`, `{"a":"0123456789&amp"}`, "\"0123456789\t\"")
	f.Add(" { \"a\" : [ 1 , \"x y\" ] }\n", `{"b":"\u0020"}`, `[]`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, vs := range [][]json.RawMessage{{}, {json.RawMessage(a)}, {json.RawMessage(a), json.RawMessage(b), json.RawMessage(c)}} {
			want := []byte{'['}
			valid := true
			for i, v := range vs {
				var buf bytes.Buffer
				valid = valid && json.Compact(&buf, v) == nil
				if i > 0 {
					want = append(want, ',')
				}
				want = append(want, buf.Bytes()...)
			}
			want = append(want, ']')
			if !valid {
				continue
			}
			got := CompactArray(vs)
			if string(got) != string(want) || !json.Valid(got) {
				t.Errorf("CompactArray(%q) = %s, want %s", vs, got, want)
			}
		}
	})
	if got := CompactArray(nil); string(got) != "null" {
		f.Errorf("CompactArray(nil) = %s", got)
	}
}

func FuzzAppendIndent(f *testing.F) {
	for _, s := range validCases {
		if len(s) < 1000 {
			f.Add(s)
		}
	}
	f.Add(" {\"a\": [1, {\"b\": []}, \"x\\\"y\"], \"c\": {}} \n")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := AppendIndent([]byte("x"), []byte(s), "  ")
		if valid := json.Valid([]byte(s)); ok != valid {
			t.Fatalf("AppendIndent(%q) ok = %v, json.Valid = %v", s, ok, valid)
		}
		if !ok {
			if string(got) != "x" {
				t.Fatalf("AppendIndent(%q) failed but wrote %q", s, got)
			}
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(s), "", "  "); err != nil {
			t.Fatal(err)
		}
		if string(got) != "x"+want.String() {
			t.Errorf("AppendIndent(%q) = %q, want %q", s, got[1:], want.String())
		}
	})
}

func TestAppendIndentDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		s := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if _, ok := AppendIndent(nil, s, ""); ok != json.Valid(s) {
			t.Errorf("depth %d: ok = %v, json.Valid = %v", n, ok, !ok)
		}
	}
}

// TestAppendIndentIndents compares AppendIndent with json.Indent for
// indents other than the two spaces the fuzzer uses, at depths past
// what AppendIndent keeps ready.
func TestAppendIndentIndents(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 40) + `1,"†x"` + strings.Repeat(`]}`, 40)
	for _, indent := range []string{"", " ", "  ", "\t", "    ", "--"} {
		for _, s := range []string{`{"a": [1, {"b": []}, "x\"y"], "c": {}}`, deep, `[]`, `"s"`} {
			got, ok := AppendIndent(nil, []byte(s), indent)
			var want bytes.Buffer
			if err := json.Indent(&want, []byte(s), "", indent); err != nil || !ok {
				t.Fatal(err, ok)
			}
			if string(got) != want.String() {
				t.Errorf("indent %q: AppendIndent(%.30q) = %q, want %q", indent, s, got, want.String())
			}
		}
	}
}

func BenchmarkAppendIndent(b *testing.B) {
	var calls []string
	for i := range 10 {
		calls = append(calls, fmt.Sprintf(`{"_tool":"t%d","x":%d,"_outputPath":"†state.r%d"}`, i, i, i))
	}
	plan := []byte("[" + strings.Join(calls, ",") + "]")
	b.SetBytes(int64(len(plan)))
	var buf []byte
	for b.Loop() {
		buf, _ = AppendIndent(buf[:0], plan, "  ")
	}
}

// BenchmarkValid checks an object of everyday strings, longer than the
// keys and tool names of a call.
func BenchmarkValid(b *testing.B) {
	data := []byte(`{"name":"A fairly long customer name","address":"221B Baker Street, London NW1 6XE, United Kingdom","notes":["call before delivery","leave at the door if nobody answers"],"id":"ord_0123456789abcdef","total":125.5}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !Valid(data) {
			b.Fatal("invalid")
		}
	}
}
