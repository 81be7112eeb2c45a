package jsonfast

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var decodeSeeds = []string{
	`{"a":[1,2.5e3,"x\"y\u00e9",true,false,null,{}],"b":{"c":-0}}`, `"plain"`, `12`, `[]`, ` { "k" : [ ] } `,
	`"\ud83d\ude00"`, `"\ud800x"`, "\"\xff\xfe\"", `{"a":1,"a":2}`, `{"b":1,"a":{"x":[ 1 , 2 ]},"b":"\u0062"}`,
	"\t{\"\\u0061\":\"\",\"a\":\"\xe2\x80\xa0\"}\n", `{}`,
}

// stdDecode decodes valid data as encoding/json's Decoder with UseNumber does.
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
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if got, want := Decode(data), stdDecode(data); !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, want %#v", data, got, want)
		}
		if end := skip(data, 0); len(bytes.TrimSpace(data[end:])) != 0 {
			t.Fatalf("skip(%q) stopped at %d", data, end)
		}
	})
}

// member is one key and raw value of an object.
type member struct {
	Key   string
	Value string
}

// stdMembers returns the members of the valid object in data, in order and
// with repeated keys, as encoding/json's Decoder reads them.
func stdMembers(t *testing.T, data []byte) []member {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if _, err := d.Token(); err != nil { // '{'
		t.Fatal(err)
	}
	var ms []member
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, member{k.(string), string(bytes.TrimSpace(v))})
	}
	return ms
}

func FuzzMembers(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || firstByte(data) != '{' {
			return
		}
		want := stdMembers(t, data)
		var got, raw []member
		Members(data, func(k string, v []byte) bool {
			got = append(got, member{k, string(v)})
			return true
		})
		RawMembers(data, func(k, v []byte) bool {
			var s string
			if k[0] != '"' || k[len(k)-1] != '"' || json.Unmarshal(k, &s) != nil {
				t.Fatalf("RawMembers(%q): key %q is not a string literal", data, k)
			}
			raw = append(raw, member{s, string(v)})
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Members(%q) = %q, want %q", data, got, want)
		}
		if !reflect.DeepEqual(raw, want) {
			t.Fatalf("RawMembers(%q) = %q, want %q", data, raw, want)
		}
		// f returning false stops the walk.
		n := 0
		Members(data, func(string, []byte) bool { n++; return n < 2 })
		if want := min(len(want), 2); n != want {
			t.Fatalf("Members(%q) called f %d times after a false, want %d", data, n, want)
		}
	})
}

func firstByte(data []byte) byte {
	if data = bytes.TrimLeft(data, " \t\r\n"); len(data) > 0 {
		return data[0]
	}
	return 0
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a"`, `"\u00e9"`, "\"\xff\"", "\"a\xe2\x80\"", `"\ud800"`, `"\ud83d\ude00"`,
		`"\udc00\ud800"`, `"\"\\\/\b\f\n\r\t"`, "\"abcdefgh\xe2\x80\xa0ijklmnop\"", `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' || !json.Valid(lit) {
			return
		}
		var want string
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatal(err)
		}
		if got := Unquote(lit); got != want {
			t.Fatalf("Unquote(%q) = %q, want %q", lit, got, want)
		}
	})
}

func FuzzElements(f *testing.F) {
	for _, s := range []string{`[]`, ` [ 1 , "a,]" , {"k":[2,3]} , [] , null ] `, `[[[]],{}]`, `["\"]"]`} {
		f.Add([]byte(s))
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || firstByte(data) != '[' {
			return
		}
		var std []json.RawMessage
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, v := range std {
			want = append(want, string(bytes.TrimSpace(v)))
		}
		var got []string
		Elements(data, func(v []byte) bool {
			got = append(got, string(v))
			return true
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Elements(%q) = %q, want %q", data, got, want)
		}
		n := 0
		Elements(data, func([]byte) bool { n++; return n < 2 })
		if want := min(len(want), 2); n != want {
			t.Fatalf("Elements(%q) called f %d times after a false, want %d", data, n, want)
		}
	})
}
