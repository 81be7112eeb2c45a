package ojson

import "testing"

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
