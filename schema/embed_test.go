package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent/schema"
)

// embedded places s, embedded, as property "output" of a schema whose
// root already has a definition named "a", and returns the whole.
func embedded(t *testing.T, s string) string {
	t.Helper()
	body, defs, err := schema.Embed(json.RawMessage(s), "_output", []string{"a"})
	if err != nil {
		t.Fatalf("Embed(%s): %v", s, err)
	}
	var d strings.Builder
	d.WriteString(`{"a":{"const":"not theirs"}`)
	for _, def := range defs {
		n, _ := json.Marshal(def.Name)
		d.WriteString("," + string(n) + ":" + string(def.Schema))
	}
	d.WriteString("}")
	return `{"type":"object","properties":{"output":` + string(body) + `},"required":["output"],"$defs":` + d.String() + `}`
}

// An embedded schema accepts exactly what it accepted on its own: its
// refs, recursive ones included, follow it to its new place and its
// definitions to the root, without taking over a name in use there.
func TestEmbedKeepsMeaning(t *testing.T) {
	for _, tt := range []struct {
		name, schema   string
		valid, invalid []string
	}{
		{"recursive root", string(schema.For[tree]()),
			[]string{`{"Name":"a","Kids":[{"Name":"b","Kids":[]}]}`},
			[]string{`{"Name":"a","Kids":[{"Name":1,"Kids":[]}]}`, `{"Name":"a","Kids":[{"Kids":[]}]}`}},
		{"definitions, one naming another and the root",
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"},"list":{"$ref":"#/$defs/list"}},"$defs":{"a":{"type":"string"},"list":{"type":"array","items":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#"}]}}}}`,
			[]string{`{"a":"x","list":["y",{"a":"z"}]}`},
			[]string{`{"a":1}`, `{"list":[1]}`, `{"list":[{"a":2}]}`}},
		{"draft-07 definitions",
			`{"type":"object","properties":{"n":{"$ref":"#/definitions/n"}},"definitions":{"n":{"type":"integer"}}}`,
			[]string{`{"n":1}`}, []string{`{"n":"1"}`}},
		{"a ref into a definition and into the body",
			`{"type":"object","properties":{"p":{"$ref":"#/$defs/obj/properties/x"},"q":{"$ref":"#/properties/p"}},"$defs":{"obj":{"properties":{"x":{"type":"boolean"}}}}}`,
			[]string{`{"p":true,"q":false}`}, []string{`{"p":1}`, `{"q":"no"}`}},
		{"names that need escaping",
			`{"type":"object","properties":{"s":{"$ref":"#/$defs/a~1b"},"t":{"$ref":"#/$defs/my%20type"}},"$defs":{"a/b":{"type":"string"},"my type":{"type":"number"}}}`,
			[]string{`{"s":"x","t":1}`}, []string{`{"s":1}`, `{"t":"x"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			alone, err := schema.Compile(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			whole := embedded(t, tt.schema)
			in, err := schema.Compile(json.RawMessage(whole))
			if err != nil {
				t.Fatalf("%v in %s", err, whole)
			}
			for _, v := range tt.valid {
				if err := alone.Validate(json.RawMessage(v)); err != nil {
					t.Fatalf("test case: %s: %v", v, err)
				}
				if err := in.Validate(json.RawMessage(`{"output":` + v + `}`)); err != nil {
					t.Errorf("embedded rejects %s: %v\n%s", v, err, whole)
				}
			}
			for _, v := range tt.invalid {
				if alone.Validate(json.RawMessage(v)) == nil {
					t.Fatalf("test case: %s is valid", v)
				}
				if in.Validate(json.RawMessage(`{"output":`+v+`}`)) == nil {
					t.Errorf("embedded accepts %s\n%s", v, whole)
				}
			}
		})
	}
}

type tree struct {
	Name string `json:"Name"`
	Kids []tree `json:"Kids"`
}

// What has nothing to move comes back as it was; a ref to a registered
// schema is left to the registry; a definition is named after the schema
// it comes from, and renamed on a clash.
func TestEmbedLeaves(t *testing.T) {
	plain := `{"type":"object","properties":{"x":{"type":"string"}}}`
	body, defs, err := schema.Embed(json.RawMessage(plain), "_output", nil)
	if err != nil || string(body) != plain || defs != nil {
		t.Errorf("plain schema: %s %v %v", body, defs, err)
	}
	body, defs, err = schema.Embed(json.RawMessage(`{"properties":{"c":{"$ref":"City"},"d":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`), "_output", []string{"_output.a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"properties":{"c":{"$ref":"City"},"d":{"$ref":"#/$defs/_output.a_2"}}}`; string(body) != want {
		t.Errorf("body %s, want %s", body, want)
	}
	if len(defs) != 1 || defs[0].Name != "_output.a_2" || string(defs[0].Schema) != `{"type":"string"}` {
		t.Errorf("defs %+v", defs)
	}
	body, defs, err = schema.Embed(json.RawMessage(`{"$id":"x:y","type":"array","items":{"$ref":"#"}}`), "_output", nil)
	if err != nil || string(body) != `{"$ref":"#/$defs/_output"}` || len(defs) != 1 || string(defs[0].Schema) != `{"type":"array","items":{"$ref":"#/$defs/_output"}}` {
		t.Errorf("a recursive root: body %s, defs %+v, %v; want a ref to it as a definition", body, defs, err)
	}
	// Only what the body refers to, directly or through another
	// definition, comes along.
	body, defs, err = schema.Embed(json.RawMessage(`{"properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"items":{"$ref":"#/$defs/b"}},"b":{"type":"string"},"c":{"type":"number"}}}`), "t", nil)
	if err != nil || string(body) != `{"properties":{"a":{"$ref":"#/$defs/t.a"}}}` || len(defs) != 2 || defs[0].Name != "t.a" || defs[1].Name != "t.b" {
		t.Errorf("unused definitions: body %s, defs %+v, %v; want t.a and t.b only", body, defs, err)
	}
	anchored := `{"properties":{"n":{"$ref":"#n"}},"$defs":{"n":{"$anchor":"n"}}}`
	if body, defs, err = schema.Embed(json.RawMessage(anchored), "_output", nil); err != nil || string(body) != anchored || defs != nil {
		t.Errorf("anchors: %s %v %v, want the schema unchanged", body, defs, err)
	}
	if _, _, err := schema.Embed(json.RawMessage(`{"$defs":[1],"$ref":"#"}`), "_output", nil); err == nil {
		t.Error("$defs that is not an object was embedded")
	}
	if _, _, err := schema.Embed(json.RawMessage(`{"$ref":`), "_output", nil); err == nil {
		t.Error("invalid JSON was embedded")
	}
}

// FuzzEmbed checks that a schema and an instance get the same answer
// alone and embedded, whatever the schema's refs and definitions.
func FuzzEmbed(f *testing.F) {
	f.Add(string(schema.For[tree]()), `{"Name":"a","Kids":[{"Name":"b","Kids":[]}]}`)
	f.Add(`{"$defs":{"a":{"type":"integer"},"b":{"items":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/b"}`, `[1,"2"]`)
	f.Add(`{"definitions":{"x y":{"minimum":3}},"properties":{"p":{"$ref":"#/definitions/x%20y"},"q":{"$ref":"#/properties/p"}}}`, `{"p":4,"q":2}`)
	f.Add(`{"anyOf":[{"$ref":"#/$defs/a~1b"},{"type":"null"}],"$defs":{"a/b":{"type":"string"}}}`, `"s"`)
	f.Add(`{"$id":"https://example.com/p","properties":{"n":{"$ref":"#/$defs/name"}},"$defs":{"name":{"type":"string"}}}`, `{"n":1}`)
	f.Add(`{"properties":{"n":{"$ref":"#name"}},"$defs":{"name":{"$anchor":"name","type":"string"}}}`, `{"n":"x"}`)
	f.Add(`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]},"b":{"$ref":"#/properties/a/anyOf/1"}}}`, `{"b":5}`)
	f.Fuzz(func(t *testing.T, s, instance string) {
		alone, err := schema.Compile(json.RawMessage(s))
		if err != nil || !json.Valid([]byte(instance)) {
			return
		}
		body, defs, err := schema.Embed(json.RawMessage(s), "_output", []string{"a"})
		if err != nil {
			return // what Embed cannot move it says so
		}
		var d strings.Builder
		d.WriteString(`{"a":false`)
		for _, def := range defs {
			n, _ := json.Marshal(def.Name)
			d.WriteString("," + string(n) + ":" + string(def.Schema))
		}
		d.WriteString("}")
		whole := `{"properties":{"output":` + string(body) + `},"$defs":` + d.String() + `}`
		in, err := schema.Compile(json.RawMessage(whole))
		if err != nil {
			t.Fatalf("%s compiles alone, not embedded: %v\n%s", s, err, whole)
		}
		a, e := alone.Validate(json.RawMessage(instance)) == nil, in.Validate(json.RawMessage(`{"output":`+instance+`}`)) == nil
		if a != e {
			t.Fatalf("%s: %s valid alone %v, embedded %v\n%s", s, instance, a, e, whole)
		}
	})
}
