package schema

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fastSchemas are schemas the fast path handles, with values that exercise it.
var fastSchemas = []struct {
	name, schema string
	values       []string
}{
	{"tool", toolSchema(0), []string{
		toolCall(0), `{"_tool":"tool0","customerId":"c","amount":0}`, `{"_tool":"tool0","customerId":"","amount":1}`,
		`{"_tool":"tool0","customerId":"c","amount":-1}`, `{"_tool":"tool0","customerId":"c","amount":1e400}`,
		`{"_tool":"tool0","customerId":"c","amount":"1"}`, `{"_tool":"tool1","customerId":"c","amount":1}`,
		`{"_tool":"tool0","customerId":"c"}`, `{"_tool":"tool0","customerId":"c","amount":1,"x":1}`,
		`{"_tool":"tool0","customerId":"c","amount":1,"currency":"GBP"}`, `{"_tool":"tool0","customerId":"c\u0000","amount":1}`,
		`{"_tool":"tool0","customerId":"c","amount":1,"notify":null}`, `{"_tool":"tool0","customerId":"c","amount":1,"amount":"x"}`,
		`{"_tool":"tool0","customerId":"c","amount":1,"lines":[1,2,3]}`, `{"_tool":"tool0","customerId":"c","amount":1,"lines":[]}`,
		`{"_tool":"tool0","customerId":"c","amount":0.30000000000000004}`, `{"_tool":"tool0","customerId":"ccccccccccccccccccccccccccccccccccccccccccccccccccccc","amount":1}`,
		`{"_tool":"tool0","customerId":"é","amount":1}`, `{"_tool":"tool0","customerId":"\u00e9","amount":1}`,
		`{"_tool":"tool0", "customerId" : "c" , "amount":1 } `, `{"_tool":"tool0","customerId":"c","amount":1}x`,
		`{"_tool":"tool0","customerId":"c","amount":01}`, `{"_tool":"tool0","customerId":"c","amount":1,}`, `[]`, `null`,
	}},
	{"solution", solutionSchema(3), []string{
		solution(3, 3), `{"calls":[],"output":null}`, `{"calls":[],"output":{"summary":"s"}}`,
		`{"calls":[{"_tool":"tool9","customerId":"c","amount":1}],"output":null}`, `{"calls":[{"customerId":"c","amount":1}],"output":null}`,
		`{"calls":[{"_tool":"tool1","_tool":"tool2","customerId":"c","amount":1}],"output":null}`,
		`{"calls":[{"_tool":"tool\u0031","customerId":"c","amount":1}],"output":null}`, `{"calls":[],"output":{}}`,
	}},
	{"types", `{"type":["integer","null"],"minimum":-5,"exclusiveMaximum":10}`, []string{
		`1`, `-5`, `-6`, `10`, `9`, `9.5`, `1.0`, `null`, `true`, `"1"`, `-0`, `1e1`, `9007199254740993`, `-`, `1.`, `.5`,
	}},
	{"enum", `{"enum":["a",1,true,null]}`, []string{`"a"`, `1`, `1.0`, `true`, `false`, `null`, `"b"`, `2`, `{}`, `[]`}},
	{"refs", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"required":["v"]}},"$ref":"#/$defs/node"}`, []string{
		`{"v":1}`, `{"v":1,"next":{"v":2,"next":{"v":3}}}`, `{"v":1,"next":{"next":{"v":3}}}`, `{"v":"1"}`, `{}`,
	}},
	{"oneOf", `{"oneOf":[{"type":"string","maxLength":3},{"type":"string","pattern":"^a"}]}`, []string{
		`"abc"`, `"abcd"`, `"bcd"`, `"b"`, `"bcde"`, `1`, `"a\u0062"`,
	}},
	{"allOf and required-only", `{"allOf":[{"required":["a"]},{"properties":{"b":{"type":"string"}},"additionalProperties":false}]}`, []string{
		`{"a":1}`, `{"b":"x"}`, `{"a":1,"b":"x"}`, `1`,
	}},
	{"items bounds", `{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}`, []string{
		`[]`, `[true]`, `[true,false]`, `[true,false,true]`, `[1]`, `[true,]`, `[ true , false ]`,
	}},
	{"literal prefix", `{"type":"string","pattern":"^†s"}`, []string{
		`"†state"`, `"†s"`, `"state"`, `"x†s"`, `"†"`, `""`, `"\u2020s"`, `"†S"`,
	}},
	{"pattern with a prefix and more", `{"type":"string","pattern":"^a.c"}`, []string{`"abc"`, `"a.c"`, `"ab"`, `"xabc"`}},
	{"false", `{"properties":{"a":false}}`, []string{`{}`, `{"a":1}`, `{"b":1}`}},
}

// TestFastPathAgrees checks that the fast path accepts only what the library accepts,
// and that it does accept the valid values (else it would be useless).
func TestFastPathAgrees(t *testing.T) {
	for _, tt := range fastSchemas {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if s.fast == nil {
				t.Fatal("no fast path")
			}
			for _, v := range tt.values {
				fast := s.fast.accepts([]byte(v))
				lib := libValid(s, v)
				if fast && !lib {
					t.Errorf("fast path accepts %s, the library does not", v)
				}
				if lib && !fast {
					t.Logf("library accepts %s, the fast path defers", v)
				}
			}
		})
	}
}

func libValid(s *Schema, v string) bool {
	val, err := decode([]byte(v))
	return err == nil && s.lib.Validate(val) == nil
}

func TestFastPathUsed(t *testing.T) {
	for _, tt := range []struct{ schema, value string }{
		{toolSchema(0), toolCall(0)},
		{solutionSchema(10), solution(10, 10)},
	} {
		s, err := Compile(raw(tt.schema))
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil || !s.fast.accepts([]byte(tt.value)) {
			t.Errorf("the fast path does not accept %s", tt.value)
		}
	}
	s, _ := Compile(raw(solutionSchema(10)))
	items := s.fast.props["calls"].node.items
	if items.disc == nil || items.discProp != "_tool" {
		t.Errorf("the anyOf of tools is not dispatched on _tool")
	}
	for _, schema := range []string{`{"format":"date-time"}`, `{"not":{}}`, `{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`{"minProperties":1}`, `{"enum":[{"a":1}]}`, `{"const":1.5}`} {
		s, err := Compile(raw(schema))
		if err != nil {
			t.Fatal(err)
		}
		if s.fast != nil {
			t.Errorf("%s has a fast path", schema)
		}
	}
}

// FuzzFastPath checks, for any bytes, that the fast path never accepts what the library
// rejects.
func FuzzFastPath(f *testing.F) {
	var compiled []*Schema
	for _, tt := range fastSchemas {
		s, err := Compile(raw(tt.schema))
		if err != nil {
			f.Fatal(err)
		}
		compiled = append(compiled, s)
		for _, v := range tt.values {
			f.Add(v)
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, s := range compiled {
			if s.fast.accepts([]byte(v)) {
				if !json.Valid([]byte(v)) {
					t.Fatalf("fast path accepts malformed %q", v)
				}
				if !libValid(s, v) {
					t.Fatalf("fast path accepts %q, the library does not", v)
				}
			}
			checkAcceptsObject(t, s, v)
		}
	})
}

// checkAcceptsObject checks AcceptsObject on v against accepts and the
// members of v: it accepts exactly the objects accepts does, and visits
// each member once, in order, with its key unescaped.
func checkAcceptsObject(t *testing.T, s *Schema, v string) {
	t.Helper()
	var got []string
	ok := s.AcceptsObject([]byte(v), func(k, val []byte) { got = append(got, string(k)+"="+string(val)) })
	isObject := json.Valid([]byte(v)) && strings.HasPrefix(strings.TrimLeft(v, " \t\r\n"), "{")
	if ok != (isObject && s.fast.accepts([]byte(v))) {
		t.Fatalf("AcceptsObject(%q) = %v; an object: %v, accepts: %v", v, ok, isObject, s.fast.accepts([]byte(v)))
	}
	if !ok {
		return
	}
	var want []string
	dec := json.NewDecoder(strings.NewReader(v))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			t.Fatal(err)
		}
		want = append(want, k.(string)+"="+string(val))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AcceptsObject(%q) visits %q, want %q", v, got, want)
	}
}

func TestAcceptsObject(t *testing.T) {
	for _, tt := range fastSchemas {
		s, err := Compile(raw(tt.schema))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range tt.values {
			checkAcceptsObject(t, s, v)
		}
		checkAcceptsObject(t, s, ` {"_tool": "t", "x" : 1 , "y":[1, {"a":2}]} `)
	}
	s, _ := Compile(raw(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`))
	n := 0
	if !s.AcceptsObject([]byte(`{"_tool":"t0","x":0,"_outputPath":"†state.r0"}`), func(k, v []byte) { n++ }) || n != 3 {
		t.Errorf("a call to t0: visited %d members", n)
	}
	if s.AcceptsObject([]byte(`{"_tool":"t0","x":"0"}`), func(k, v []byte) {}) {
		t.Error("a string x accepted")
	}
}
