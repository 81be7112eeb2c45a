package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent/schema"
)

// relaxed compiles s as a run validates what a strict OpenAI model wrote.
func relaxed(t testing.TB, s string) *schema.Schema {
	t.Helper()
	c, err := schema.NewRegistry().CompileFor(json.RawMessage(s), schema.OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A null that stands for an absent optional property goes, at any depth;
// a null the schema as written takes stays; the rest keeps its order and
// bytes.
func TestDropAbsent(t *testing.T) {
	const tool = `{"type":"object","properties":{
		"id":{"type":"integer"},
		"note":{"type":"string"},
		"maybe":{"type":["string","null"]},
		"must":{"type":["string","null"]},
		"any":{},
		"pick":{"anyOf":[{"type":"string"},{"type":"object","properties":{"k":{"type":"string"},"opt":{"type":"integer"}},"required":["k"]}]},
		"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}
	},"required":["id","must"],"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}}}`
	s := relaxed(t, tool)
	for _, tt := range []struct{ name, in, want string }{
		{"nothing null", `{"id":1,"must":"x"}`, `{"id":1,"must":"x"}`},
		{"an optional string", `{"id":1,"note":null,"must":"x"}`, `{"id":1,"must":"x"}`},
		{"nulls the schema takes", `{"id":1,"maybe":null,"must":null,"any":null}`, `{"id":1,"maybe":null,"must":null,"any":null}`},
		{"order and values kept", `{ "must" : "x" , "note" : null, "pick" : { "k" : "a" }, "id" : 1 }`, `{"must":"x","pick":{ "k" : "a" },"id":1}`},
		{"inside an anyOf", `{"id":1,"must":"x","pick":{"k":"a","opt":null},"note":null}`, `{"id":1,"must":"x","pick":{"k":"a"}}`},
		{"a whole anyOf", `{"id":1,"must":"x","pick":null}`, `{"id":1,"must":"x"}`},
		{"in a tree", `{"id":1,"must":"x","kids":[{"name":"a","kids":[{"name":"b","kids":null}]},{"name":"c","kids":null}]}`,
			`{"id":1,"must":"x","kids":[{"name":"a","kids":[{"name":"b"}]},{"name":"c"}]}`},
		{"a string that says null", `{"id":1,"must":"null","note":"null"}`, `{"id":1,"must":"null","note":"null"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Validate(json.RawMessage(tt.in)); err != nil {
				t.Fatalf("test case: %s: %v", tt.in, err)
			}
			if got := s.DropAbsent(json.RawMessage(tt.in)); string(got) != tt.want {
				t.Errorf("DropAbsent(%s)\n= %s\nwant %s", tt.in, got, tt.want)
			}
			checkAccept(t, s, tt.in, tt.want, "")
		})
	}
	// A null that only the alternative not taken refuses stays: here it
	// says "clear the value".
	const modes = `{"type":"object","properties":{"mode":{"enum":["set","clear"]},"value":{"type":["string","null"]},"note":{"type":"string"}},"required":["mode"],
		"anyOf":[{"properties":{"mode":{"const":"set"},"value":{"type":"string"}}},{"properties":{"mode":{"const":"clear"},"note":{"type":"string"}}}]}`
	if got := relaxed(t, modes).DropAbsent(json.RawMessage(`{"mode":"clear","value":null,"note":null}`)); string(got) != `{"mode":"clear","value":null}` {
		t.Errorf("anyOf: DropAbsent = %s, want the null value kept", got)
	}
	// A required property's null is no absence: such data is not valid
	// for s, and comes back as it is.
	bad := `{"id":null,"must":"x","note":null}`
	if got := s.DropAbsent(json.RawMessage(bad)); string(got) != bad {
		t.Errorf("DropAbsent(%s) = %s, want it unchanged", bad, got)
	}
	if got, err := s.Accept(json.RawMessage(bad)); got != nil || err == nil || !strings.Contains(err.Error(), "/id") {
		t.Errorf("Accept(%s) = %s, %v; want the error at /id", bad, got, err)
	}
	// A schema compiled as written keeps every null.
	plain, err := schema.Compile(json.RawMessage(tool))
	if err != nil {
		t.Fatal(err)
	}
	if in := `{"id":1,"note":null,"must":"x"}`; string(plain.DropAbsent(json.RawMessage(in))) != in {
		t.Errorf("a schema compiled as written dropped a null")
	}
}

// FuzzDropAbsent checks, for any schema and value the relaxed schema
// accepts, that what DropAbsent returns is the value itself or one the
// schema as written accepts, with only nulls taken out; and that what
// Accept takes, the schema as written takes.
func FuzzDropAbsent(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}}}}}`, `{"a":null,"b":{"c":null}}`)
	f.Add(`{"type":"object","properties":{"a":{"anyOf":[{"type":"null"},{"type":"object","properties":{"x":{"const":1}}}]}}}`, `{"a":{"x":null}}`)
	f.Add(`{"type":"array","items":{"type":"object","properties":{"n":{"type":"number"}},"required":[]}}`, `[{"n":null},{"n":2},{}]`)
	f.Add(`{"type":"object","properties":{"a":{"not":{"type":"string"}}}}`, `{"a":null}`)
	f.Add(`{"oneOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"a":{"type":"integer"}}}]}`, `{"a":null}`)
	f.Add(`{"type":"object","properties":{"k":{"enum":["a","b"]}},"oneOf":[{"properties":{"k":{"const":"a"},"x":{"type":"string"}}},{"properties":{"k":{"const":"b"},"y":{"type":"integer"}},"required":["y"]}]}`, `{"k":"a","x":null,"y":null}`)
	f.Add(`{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"dependentRequired":{"a":["b"]}}`, `{"a":null,"b":null}`)
	f.Add(`{"type":"object","properties":{"kind":{"enum":["a","b"]}},"oneOf":[{"properties":{"kind":{"const":"a"},"x":{"type":"string"}}},{"properties":{"kind":{"const":"b"},"x":{"type":["string","null"]}},"required":["x"]}]}`, `{"kind":"b","x":null}`)
	f.Add(`{"type":"object","properties":{"k":{}},"anyOf":[{"properties":{"x":{"$ref":"#/$defs/d"}},"required":["x"]},{"properties":{"y":{"type":"integer"}},"not":{"required":["x"]}}],"$defs":{"d":{"type":["string","null"]}}}`, `{"k":1,"x":null,"y":null}`)
	f.Add(`{"type":"array","uniqueItems":true,"items":{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"dependentRequired":{"a":["b"]}}}`, `[{"a":null,"b":null},{"a":null}]`)
	f.Add(`{"type":"object","properties":{"a":{"type":["integer","null"]},"b":{"type":["integer","null"]}},"oneOf":[{"required":["a"]},{"required":["b"]}]}`, `{"a":1,"b":null}`)
	f.Add(`{"type":"object","properties":{"o":{"type":"object","properties":{"t":{"const":1}},"anyOf":[{"properties":{"t":{"const":1},"p":{"type":"object","properties":{"q":{"type":"string"}}}}},{"properties":{"r":{"not":{"type":"null"}}}}]}}}`, `{"o":{"t":1,"p":{"q":null},"r":null}}`)
	f.Add(`{"type":"object","properties":{"a":{"type":["string","null"]}},"maxProperties":1,"minProperties":1,"if":{"required":["a"]},"then":{"properties":{"b":{"type":"null"}}}}`, `{"a":null,"b":null}`)
	f.Fuzz(func(t *testing.T, s, data string) {
		r, err := schema.NewRegistry().CompileFor(json.RawMessage(s), schema.OpenAI)
		if err != nil || !json.Valid([]byte(data)) {
			return
		}
		written, err := schema.Compile(json.RawMessage(s))
		if err != nil {
			t.Fatalf("%s compiles relaxed, not as written: %v", s, err)
		}
		acc, err := r.Accept(json.RawMessage(data))
		if err == nil && written.Validate(acc) != nil {
			t.Fatalf("Accept(%s) under %s = %s, which the schema as written refuses: %v", data, s, acc, written.Validate(acc))
		}
		if r.Validate(json.RawMessage(data)) != nil {
			return // DropAbsent takes only what s accepts
		}
		got := r.DropAbsent(json.RawMessage(data))
		switch {
		case err != nil && string(got) != data:
			t.Fatalf("Accept(%s) under %s: %v; DropAbsent = %s", data, s, err, got)
		case err == nil && string(acc) != string(got):
			t.Fatalf("Accept(%s) under %s = %s; DropAbsent = %s", data, s, acc, got)
		}
		if string(got) == data {
			return
		}
		if err := written.Validate(got); err != nil {
			t.Fatalf("DropAbsent(%s) under %s = %s, which the schema as written refuses: %v", data, s, got, err)
		}
		var in, out any
		if json.Unmarshal([]byte(data), &in) != nil || json.Unmarshal(got, &out) != nil {
			t.Fatalf("DropAbsent(%s) = %s, not JSON", data, got)
		}
		if !onlyNullsGone(in, out) {
			t.Fatalf("DropAbsent(%s) = %s: more than nulls went", data, got)
		}
	})
}

// onlyNullsGone reports whether out is in with some null object members
// removed.
func onlyNullsGone(in, out any) bool {
	switch x := in.(type) {
	case map[string]any:
		y, ok := out.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok {
				if v != nil {
					return false
				}
				continue
			}
			if !onlyNullsGone(v, w) {
				return false
			}
		}
		return len(y) <= len(x)
	case []any:
		y, ok := out.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !onlyNullsGone(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	return string(a) == string(b)
}

// Accept judges what a strict model's nulls stand for: the value without
// them. A rule on which properties are present holds as written, where a
// null taken for a value would have met it, or broken it.
func TestAcceptPresence(t *testing.T) {
	for _, tt := range []struct{ name, schema, in, want, err string }{
		{"then required", `{"type":"object","properties":{"kind":{"enum":["email","sms"]},"email":{"type":"string"},"phone":{"type":"string"}},"required":["kind"],
			"if":{"properties":{"kind":{"const":"email"}}},"then":{"required":["email"]},"else":{"required":["phone"]}}`,
			`{"kind":"email","email":null,"phone":null}`, "", `"email"`},
		{"then required, met", `{"type":"object","properties":{"kind":{"enum":["email","sms"]},"email":{"type":"string"},"phone":{"type":"string"}},"required":["kind"],
			"if":{"properties":{"kind":{"const":"email"}}},"then":{"required":["email"]},"else":{"required":["phone"]}}`,
			`{"kind":"email","email":"a@b.c","phone":null}`, `{"kind":"email","email":"a@b.c"}`, ""},
		{"one of two present", `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"oneOf":[{"required":["id"]},{"required":["name"]}]}`,
			`{"id":"u1","name":null}`, `{"id":"u1"}`, ""},
		{"neither present", `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"oneOf":[{"required":["id"]},{"required":["name"]}]}`,
			`{"id":null,"name":null}`, "", "alternatives"},
		{"dependentRequired", `{"type":"object","properties":{"card":{"type":"string"},"cvv":{"type":"string"}},"dependentRequired":{"card":["cvv"]}}`,
			`{"card":"4242","cvv":null}`, "", `"cvv"`},
		{"minProperties", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"minProperties":1}`,
			`{"a":null,"b":null}`, "", "at least 1 property"},
		{"a type and an allOf", `{"type":"object","properties":{"color":{"type":"string","allOf":[{"enum":["red","blue"]}]}}}`,
			`{"color":null}`, `{}`, ""},
		{"a null the schema takes, which a rule says is absent", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"dependentRequired":{"a":["b"]}}`,
			`{"a":null,"b":null}`, `{}`, ""},
		{"a null the schema takes, which a rule lets be", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"dependentRequired":{"a":["b"]}}`,
			`{"a":null,"b":"y"}`, `{"a":null,"b":"y"}`, ""},
		{"a null the schema takes, under not required", `{"type":"object","properties":{"a":{"type":["string","null"]},"n":{"type":"integer"}},"not":{"required":["a"]}}`,
			`{"a":null,"n":1}`, `{"n":1}`, ""},
		{"only the null in the way goes", `{"type":"object","properties":{"r":{"type":["string","null"]},"a":{"type":["string","null"]},"m":{"type":["string","null"]},"b":{"type":"string"}},
			"required":["r"],"dependentRequired":{"a":["b"]}}`,
			`{"r":null,"a":null,"m":null,"b":null}`, `{"r":null,"m":null}`, ""},
		{"a rule no null meets", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"dependentRequired":{"b":["a"]}}`,
			`{"a":null,"b":"y"}`, `{"a":null,"b":"y"}`, ""},
		{"a rule that needs a value", `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"string"}},"required":["a"],"dependentRequired":{"a":["b"]}}`,
			`{"a":null,"b":null}`, "", `"b"`},
		{"a null is no way round another rule", `{"type":"array","uniqueItems":true,"items":{"type":"object","properties":{"a":{"type":["string","null"]}}}}`,
			`[{"a":null},{"a":null}]`, "", "must be unique"},
		{"a wrong value stays wrong", `{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}}}`,
			`{"n":"x","s":null}`, "", "/n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkAccept(t, relaxed(t, tt.schema), tt.in, tt.want, tt.err)
		})
	}
	// The relaxed schema itself takes the null of an optional property
	// whose applicators refuse null, so its errors never blame one.
	for _, s := range []string{
		`{"type":"object","properties":{"color":{"type":"string","allOf":[{"enum":["red","blue"]}]}}}`,
		`{"type":"object","properties":{"color":{"type":"string","$ref":"#/$defs/c"}},"$defs":{"c":{"minLength":1,"type":"string"}}}`,
		`{"type":"object","properties":{"color":{"type":"string","not":{"type":"null"}}}}`,
	} {
		if err := relaxed(t, s).Validate(json.RawMessage(`{"color":null}`)); err != nil {
			t.Errorf("relaxed %s refuses an optional null: %v", s, err)
		}
	}
}

// A property only some cases of a oneOf name is written by a strict
// OpenAI model in every case (Adapt joins it to the object), null where
// it leaves it out; that null is absent, though the case the value takes
// does not say the property.
func TestAcceptUnionCases(t *testing.T) {
	const pay = `{"type":"object","properties":{"method":{"enum":["card","bank","cash"]}},"required":["method"],
		"oneOf":[{"properties":{"method":{"const":"card"},"card":{"type":"string"},"memo":{"type":["string","null"]}},"required":["card"]},
		         {"properties":{"method":{"const":"bank"},"iban":{"type":"string"}},"required":["iban"]},
		         {"$ref":"#/$defs/cash"}],
		"$defs":{"cash":{"properties":{"method":{"const":"cash"},"change":{"type":"boolean"}}}}}`
	for _, tt := range []struct{ name, in, want, err string }{
		{"card", `{"method":"card","card":"4111","memo":"x","iban":null,"change":null}`, `{"method":"card","card":"4111","memo":"x"}`, ""},
		{"bank", `{"method":"bank","card":null,"memo":null,"iban":"DE1","change":null}`, `{"method":"bank","memo":null,"iban":"DE1"}`, ""},
		{"a case by $ref", `{"method":"cash","card":null,"memo":null,"iban":null,"change":true}`, `{"method":"cash","memo":null,"change":true}`, ""},
		{"a value where the case does not say it", `{"method":"cash","card":"4111","memo":null,"iban":null,"change":null}`, `{"method":"cash","card":"4111","memo":null}`, ""},
		{"a case's required property left out", `{"method":"bank","card":null,"memo":null,"iban":null,"change":null}`, "", "iban"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := relaxed(t, pay)
			if !checkAccept(t, s, tt.in, tt.want, tt.err) {
				return
			}
			if d := s.DropAbsent(json.RawMessage(tt.in)); string(d) != tt.want {
				t.Errorf("DropAbsent(%s) = %s; want %s", tt.in, d, tt.want)
			}
		})
	}
	// Cases in schemas registered by name are joined too.
	reg := schema.NewRegistry()
	reg.Register("Card", json.RawMessage(`{"properties":{"method":{"const":"card"},"card":{"type":"string"}},"required":["card"]}`))
	reg.Register("Bank", json.RawMessage(`{"properties":{"method":{"const":"bank"},"iban":{"type":"string"}},"required":["iban"]}`))
	s, err := reg.CompileFor(json.RawMessage(`{"type":"object","properties":{"method":{"enum":["card","bank"]}},"required":["method"],"oneOf":[{"$ref":"Card"},{"$ref":"Bank"}]}`), schema.OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	checkAccept(t, s, `{"method":"card","card":"4111","iban":null}`, `{"method":"card","card":"4111"}`, "")
}

// checkAccept checks that s.Accept(in) returns want, or an error saying
// wantErr when it is not empty; it reports whether want was the case.
func checkAccept(t *testing.T, s *schema.Schema, in, want, wantErr string) bool {
	t.Helper()
	got, err := s.Accept(json.RawMessage(in))
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Accept(%s) = %s, %v; want an error saying %s", in, got, err, wantErr)
		}
		return false
	}
	if err != nil || string(got) != want {
		t.Errorf("Accept(%s) = %s, %v; want %s", in, got, err, want)
	}
	return true
}

// A property several cases name, one of which takes null for it, is no
// absence when the value takes that case: the rule a null is judged by
// must not refuse what a case naming the property takes.
func TestAcceptCaseTakesNull(t *testing.T) {
	const s = `{"type":"object","properties":{"kind":{"enum":["a","b","c"]}},"required":["kind"],
		"oneOf":[{"properties":{"kind":{"const":"a"},"x":{"type":"string"}}},
		         {"properties":{"kind":{"const":"b"},"x":{"type":["string","null"]}},"required":["x"]},
		         {"properties":{"kind":{"const":"c"}}}]}`
	r := relaxed(t, s)
	checkAccept(t, r, `{"kind":"b","x":null}`, `{"kind":"b","x":null}`, "")
	checkAccept(t, r, `{"kind":"a","x":null}`, `{"kind":"a"}`, "")
}

// A case with its own base URI ($id) resolves its refs against it; the
// rules a strict model's nulls are judged by must not break the schema.
func TestCompileForCaseWithID(t *testing.T) {
	const s = `{"type":"object","properties":{"k":{}},"oneOf":[{"$id":"http://example.com/c","properties":{"x":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string"}}}]}`
	if _, err := schema.Compile(json.RawMessage(s)); err != nil {
		t.Fatal(err)
	}
	checkAccept(t, relaxed(t, s), `{"k":1,"x":"s"}`, `{"k":1,"x":"s"}`, "")
}
