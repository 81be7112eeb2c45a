package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type flatParams struct {
	X    int    `json:"x"`
	N    int8   `json:"n,omitempty"`
	U    uint16 `json:"u,omitempty"`
	OK   bool   `json:"ok,omitempty"`
	Name string `json:"name,omitempty"`
}

// slowDecode is Decode without the flat path: validation, then
// json.Unmarshal.
func slowDecode[T any](data json.RawMessage) (T, error) {
	var v T
	ts := typeSchemaOf(reflect.TypeFor[T]())
	if err := ts.compiled.Validate(data); err != nil {
		return v, err
	}
	err := json.Unmarshal(data, &v)
	return v, err
}

func TestFlatOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		typ  reflect.Type
		flat bool
	}{
		{"plain", reflect.TypeFor[flatParams](), true},
		{"untagged", reflect.TypeFor[struct{ Y int }](), true},
		{"float", reflect.TypeFor[struct{ F float64 }](), false},
		{"pointer", reflect.TypeFor[struct{ P *int }](), false},
		{"constraint", reflect.TypeFor[struct {
			X int `json:"x" jsonschema:"minimum=1"`
		}](), false},
		{"string option", reflect.TypeFor[struct {
			X int `json:"x,string"`
		}](), false},
		{"skipped", reflect.TypeFor[struct {
			X int `json:"-"`
		}](), false},
		{"empty", reflect.TypeFor[struct{}](), false},
		{"refund", reflect.TypeFor[refundParams](), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := typeSchemaOf(tt.typ)
			if got := ts.flat != nil; got != tt.flat {
				t.Errorf("flat = %v, want %v (schema %s)", got, tt.flat, ts.raw)
			}
		})
	}
}

var flatValues = []string{
	`{"x":1}`, ` { "x" : -12 , "n":127, "u":65535, "ok":true, "name":"héllo" } `, `{"x":1,"x":2}`,
	`{"x":1.0}`, `{"x":1e2}`, `{"x":01}`, `{"x":-0}`, `{"x":"1"}`, `{"n":1}`, `{"x":1,"n":128}`,
	`{"x":1,"u":-1}`, `{"x":1,"u":65536}`, `{"x":1,"name":"a\"b"}`, `{"x":1,"name":"\u00e9"}`,
	`{"x":1,"X":2}`, `{"x":1,"z":2}`, `{"x":1,"ok":null}`, `{"x":1,"ok":truex}`, `{"x":1}x`, `{"x":1,}`,
	`{}`, `[]`, `null`, `{"x":99999999999999999999}`, "{\"x\":1,\"name\":\"\xff\"}", `{"x":1 "n":2}`,
	`{"\u0078":1}`, `{"x":1,"ok":false}`,
}

func TestFlatDecode(t *testing.T) {
	for _, v := range flatValues {
		checkFlat(t, v)
	}
}

func FuzzFlatDecode(f *testing.F) {
	for _, v := range flatValues {
		f.Add(v)
	}
	f.Fuzz(checkFlat)
}

// checkFlat checks that Decode agrees with validation and json.Unmarshal
// on v: the same value, or an error with the same text.
func checkFlat(t *testing.T, v string) {
	got, gerr := Decode[flatParams](json.RawMessage(v))
	want, werr := slowDecode[flatParams](json.RawMessage(v))
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("Decode(%q) error %v, the slow way %v", v, gerr, werr)
	}
	if gerr == nil {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Decode(%q) (-want +got):\n%s", v, diff)
		}
	}
}
