package jsonfast

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

func stdDecode(data []byte) any {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\"y\u00e9",true,false,null,{}],"b":{"c":-0}}`, `"plain"`, `12`, `[]`, ` { "k" : [ ] } `, `"\ud83d\ude00"`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if got, want := Decode(data), stdDecode(data); !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, want %#v", data, got, want)
		}
		if end := Skip(data, 0); len(bytes.TrimSpace(data[end:])) != 0 {
			t.Fatalf("Skip(%q) stopped at %d", data, end)
		}
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) {
			var want []json.RawMessage
			_ = json.Unmarshal(data, &want)
			var got []string
			Elements(data, func(v []byte) bool { got = append(got, string(v)); return true })
			if len(got) != len(want) {
				t.Fatalf("Elements(%q) = %q, want %q", data, got, want)
			}
			for i := range want {
				if got[i] != string(bytes.TrimSpace(want[i])) {
					t.Fatalf("Elements(%q)[%d] = %q, want %q", data, i, got[i], want[i])
				}
			}
		}
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			var want map[string]json.RawMessage
			_ = json.Unmarshal(data, &want)
			got := map[string]string{}
			Members(data, func(k string, v []byte) bool { got[k] = string(v); return true })
			if len(got) != len(want) {
				t.Fatalf("Members(%q) = %v, want %v", data, got, want)
			}
			for k, v := range want {
				if got[k] != string(bytes.TrimSpace(v)) {
					// duplicate keys: the last one wins in both
					t.Fatalf("Members(%q)[%q] = %q, want %q", data, k, got[k], v)
				}
			}
		}
	})
}

// TestRuneLen compares RuneLen with utf8.DecodeRune on every sequence of
// up to three bytes that starts with a byte of 0x80 or more, whole and cut.
func TestRuneLen(t *testing.T) {
	want := func(d []byte) int {
		if r, n := utf8.DecodeRune(d); r != utf8.RuneError || n > 1 {
			return n
		}
		return 0
	}
	d := make([]byte, 4)
	for c := 0x80; c <= 0xFF; c++ {
		for b1 := range 256 {
			for b2 := range 256 {
				d[0], d[1], d[2], d[3] = byte(c), byte(b1), byte(b2), 0x80
				for _, n := range []int{1, 2, 3, 4} {
					if got, w := RuneLen(d[:n], 0), want(d[:n]); got != w {
						t.Fatalf("RuneLen(% x) = %d, want %d", d[:n], got, w)
					}
				}
			}
		}
	}
}
