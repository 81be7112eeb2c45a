package ojson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestObject(t *testing.T) {
	o, err := Parse([]byte(`{"b": 1, "a": {"x": [1, 2]}, "c": "<&>"}`))
	if err != nil {
		t.Fatal(err)
	}
	o.Set("a", []byte(`2`))
	o.Set("d", []byte(`null`))
	o.SetFirst("z", Quote("é"))
	o.Delete("b")
	if got, want := string(o.Bytes()), `{"z":"é","a":2,"c":"<&>","d":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if string(o.Get("c")) != `"<&>"` || o.Get("nope") != nil || !o.Has("d") {
		t.Errorf("Get/Has wrong")
	}
	for _, bad := range []string{`[]`, `{"a":}`, `{"a":1`, ``} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestAppendQuote(t *testing.T) {
	for _, s := range []string{"", "x", "a b", `q"`, `b\s`, "tab\t", "é", "<&>"} {
		got := string(AppendQuote([]byte("p:"), s))
		if want := "p:" + string(Quote(s)); got != want {
			t.Errorf("AppendQuote(%q) = %s, want %s", s, got, want)
		}
	}
}

// Parse compacts: Bytes of a parsed object is json.Compact of its input,
// and its values do not alias the input.
func TestParseCompacts(t *testing.T) {
	in := []byte("{ \"a\" : [ 1 , { \"b\" : \" x y \" } ] ,\n\t\"c\":\"\\u00e9 \" }")
	o, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, in); err != nil {
		t.Fatal(err)
	}
	if got := o.Bytes(); string(got) != want.String() {
		t.Errorf("Bytes = %s, want %s", got, want.String())
	}
	for i := range in {
		in[i] = 'X'
	}
	if got := string(o.Get("a")); got != `[1,{"b":" x y "}]` {
		t.Errorf("a = %s after the input changed", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, "{ \"a\" : [ 1 , 2 ] }", `{"a":{"b":"\u2020 x"},"a":2}`, `{"<":"&"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		o, err := Parse(in)
		if err != nil {
			return
		}
		got := o.Bytes()
		if !json.Valid(got) {
			t.Fatalf("Bytes of %q is not JSON: %s", in, got)
		}
		var a, b any
		if json.Unmarshal(in, &a) != nil || json.Unmarshal(got, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("Bytes of %q = %s, another value", in, got)
		}
	})
}
