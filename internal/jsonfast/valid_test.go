package jsonfast

import (
	"encoding/json"
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
