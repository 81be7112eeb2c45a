package agent

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestFlatEncoderImplies(t *testing.T) {
	type R struct {
		N    int    `json:"n"`
		U    uint8  `json:"u"`
		OK   bool   `json:"ok"`
		Name string `json:"name,omitempty"`
	}
	enc := flatEncoder(reflect.TypeFor[R]())
	for _, c := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object"}`, true},
		{`{"type":["object","null"],"description":"a result"}`, true},
		{`{"type":"object","properties":{"n":{"type":"integer"},"u":{"type":"number","title":"u"},"ok":{"type":"boolean"},"name":{"type":["string","null"]}}}`, true},
		{`{"type":"object","properties":{"n":{"type":"integer"},"u":{},"ok":true,"name":{"type":"string"},"other":{"type":"string","minLength":3}},"additionalProperties":false}`, true},
		{`{"type":"object","required":["n","ok"]}`, true},
		// A value may miss it, or break it, or the schema asks what the
		// text alone does not tell: the library judges.
		{`{"type":"object","required":["name"]}`, false}, // omitempty
		{`{"type":"object","required":["missing"]}`, false},
		{`{"type":"object","properties":{"n":{"type":"integer","maximum":3}}}`, false},
		{`{"type":"object","properties":{"n":{"type":"string"}}}`, false},
		{`{"type":"object","properties":{"ok":{"type":"integer"}}}`, false},
		{`{"type":"object","properties":{"name":{"enum":["a"]}}}`, false},
		{`{"type":"object","properties":{"name":false}}`, false},
		{`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`, false},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, false},
		{`{"type":"object","properties":{"n":{"type":["integer","int"]}}}`, false},
		{`{"type":"array"}`, false},
		{`{"properties":{"n":{"type":"integer"}}}`, false},
		{`{"type":"object","minProperties":1}`, false},
		{`{"$ref":"#/$defs/r","$defs":{"r":{"type":"object"}}}`, false},
		{`{"type":"object","properties":{"n":{"$ref":"#"}}}`, false},
		{`true`, false},
		{`not json`, false},
		{``, false},
	} {
		if got := enc.implies(json.RawMessage(c.schema)); got != c.want {
			t.Errorf("implies(%s) = %v, want %v", c.schema, got, c.want)
		}
	}
}
