package schema

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fastSchemas are schemas with values that exercise the fast path: overlapping
// alternatives, numbers written as integers in other forms, escaped strings, nesting.
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
		`{"_tool":"tool0","customerId":"c","amount":1,"lines":[1,2,3]}`, `{"_tool":"tool0","customerId":"c","amount":1,"lines":[1.0,2e0,-0]}`,
		`{"_tool":"tool0","customerId":"c","amount":1,"lines":[1.5]}`, `{"_tool":"tool0","customerId":"c","amount":-0}`,
		`{"_tool":"tool0","customerId":"c","amount":0.30000000000000004}`, `{"_tool":"tool0","customerId":"ccccccccccccccccccccccccccccccccccccccccccccccccccccc","amount":1}`,
		`{"_tool":"tool0","customerId":"é","amount":1}`, `{"_tool":"tool0","customerId":"\u00e9","amount":1}`,
		`{"\u005ftool":"tool0","customerId":"c","amount":1}`, `{"_tool":"tool0","customerId":"\ud83d\ude00","amount":1}`,
		`{"_tool":"tool0", "customerId" : "c" , "amount":1 } `, `{"_tool":"tool0","customerId":"c","amount":1}x`,
		`{"_tool":"tool0","customerId":"c","amount":01}`, `{"_tool":"tool0","customerId":"c","amount":1,}`, `[]`, `null`,
	}},
	{"solution", solutionSchema(3), []string{
		solution(3, 3), `{"calls":[],"output":null}`, `{"calls":[],"output":{"summary":"s"}}`,
		`{"calls":[{"_tool":"tool9","customerId":"c","amount":1}],"output":null}`, `{"calls":[{"customerId":"c","amount":1}],"output":null}`,
		`{"calls":[{"_tool":"tool1","_tool":"tool2","customerId":"c","amount":1}],"output":null}`,
		`{"calls":[{"_tool":"tool\u0031","customerId":"c","amount":1}],"output":null}`, `{"calls":[],"output":{}}`,
	}},
	{"integer bounds", `{"type":["integer","null"],"minimum":-5,"exclusiveMaximum":10}`, []string{
		`1`, `-5`, `-6`, `10`, `9`, `9.5`, `1.0`, `null`, `true`, `"1"`, `-0`, `1e1`, `9.99e0`, `1E2`, `100e-2`,
		`9007199254740993`, `-5.0000000000000000001`, `-`, `1.`, `.5`,
	}},
	{"multipleOf", `{"multipleOf":0.1}`, []string{`0.3`, `0.30000000000000004`, `3e-1`, `1`, `0.05`}},
	{"enum", `{"enum":["a",1,true,null,{"k":[1]}]}`, []string{
		`"a"`, `"\u0061"`, `1`, `1.0`, `1e0`, `true`, `false`, `null`, `"b"`, `2`, `{}`, `[]`, `{"k":[1.0]}`, `{"k":[2]}`,
	}},
	{"refs", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/node"}},"required":["v"]}},"$ref":"#/$defs/node"}`, []string{
		`{"v":1}`, `{"v":1,"next":{"v":2,"next":{"v":3}}}`, `{"v":1,"next":{"next":{"v":3}}}`, `{"v":"1"}`, `{}`, `{"v":1e0}`,
	}},
	{"ref cycle", `{"anyOf":[{"$ref":"#"},{"type":"string"}]}`, []string{`"a"`, `1`}},
	{"oneOf number integer", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, []string{
		`1.5`, `1`, `1.0`, `1e0`, `-0`, `1E2`, `100e-2`, `1e400`, `"1"`,
	}},
	{"oneOf string maxLength", `{"oneOf":[{"type":"string"},{"maxLength":3}]}`, []string{
		`"abc"`, `"abcd"`, `"\u0061bc"`, `"\u0061bcd"`, `"\ud83d\ude00"`, `"ab\ud83d\ude00x"`, `"é"`, `1`,
	}},
	{"oneOf string minLength", `{"oneOf":[{"type":"string"},{"minLength":2}]}`, []string{`"a"`, `"ab"`, `"\u0061"`, `"\u0061b"`, `"\ud83d\ude00"`}},
	{"oneOf string pattern", `{"oneOf":[{"type":"string","maxLength":3},{"type":"string","pattern":"^a"}]}`, []string{
		`"abc"`, `"abcd"`, `"bcd"`, `"b"`, `"bcde"`, `1`, `"a\u0062"`, `"\u0061bcd"`,
	}},
	{"oneOf const enum", `{"oneOf":[{"const":"é"},{"enum":["\u00e9","x"]},{"const":1},{"enum":[1.0,2]}]}`, []string{
		`"é"`, `"\u00e9"`, `"x"`, `1`, `1e0`, `2`, `2.0`, `3`,
	}},
	{"anyOf", `{"anyOf":[{"type":"integer"},{"type":"string","minLength":2}]}`, []string{`1`, `1.0`, `1.5`, `"ab"`, `"\u0061"`, `null`}},
	{"not integer", `{"not":{"type":"integer"}}`, []string{`1`, `1.0`, `1e0`, `1.5`, `"a"`}},
	{"not format", `{"not":{"type":"string","format":"date-time"}}`, []string{`1`, `"x"`, `"2024-01-01T00:00:00Z"`}},
	{"allOf", `{"allOf":[{"required":["a"]},{"properties":{"b":{"type":"string"}},"additionalProperties":false}]}`, []string{
		`{"a":1}`, `{"b":"x"}`, `{"a":1,"b":"x"}`, `1`,
	}},
	{"if then else", `{"if":{"properties":{"k":{"const":"n"}}},"then":{"properties":{"v":{"type":"integer"}}},"else":{"properties":{"v":{"type":"string"}}}}`, []string{
		`{"k":"n","v":1}`, `{"k":"n","v":1.0}`, `{"k":"n","v":"1"}`, `{"k":"s","v":"1"}`, `{"k":"s","v":1}`, `{"v":"1"}`, `{"k":"\u006e","v":2}`,
	}},
	{"dependent", `{"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"properties":{"d":{"maxLength":1}}}}}`, []string{
		`{"a":1}`, `{"a":1,"b":2}`, `{"c":1,"d":"x"}`, `{"c":1,"d":"xy"}`, `{"d":"xy"}`, `{"c":1,"d":"\u0078"}`,
	}},
	{"patternProperties", `{"patternProperties":{"^x":{"type":"integer"}},"properties":{"xa":{"minimum":2}},"additionalProperties":{"type":"string"},"propertyNames":{"maxLength":3}}`, []string{
		`{"xa":2}`, `{"xa":1}`, `{"xa":2.0}`, `{"xb":1.5}`, `{"y":"s"}`, `{"y":1}`, `{"long":"s"}`, `{"\u0078a":1}`,
	}},
	{"arrays", `{"prefixItems":[{"type":"string"}],"items":{"type":"integer"},"contains":{"const":2},"maxContains":2,"uniqueItems":true}`, []string{
		`["a",2]`, `["a",2,2]`, `["a",2,2.0]`, `["a",1]`, `[1,2]`, `["a",2,1.5]`, `["a",2,3,2e0]`, `[]`,
	}},
	{"nested", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}}}}`, []string{
		`{"a":[{"b":1.5},{"b":2.5}]}`, `{"a":[{"b":1.5},{"b":2.0}]}`, `{"a":[{"b":1.5},{"b":"x"}]}`, `{"a":[]}`,
	}},
	{"items bounds", `{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}`, []string{
		`[]`, `[true]`, `[true,false]`, `[true,false,true]`, `[1]`, `[true,]`, `[ true , false ]`,
	}},
	{"literal prefix", `{"type":"string","pattern":"^†s"}`, []string{
		`"†state"`, `"†s"`, `"state"`, `"x†s"`, `"†"`, `""`, `"\u2020s"`, `"†S"`,
	}},
	{"unevaluated", `{"properties":{"a":true},"unevaluatedProperties":false}`, []string{`{"a":1}`, `{"b":1}`, `1`}},
	{"false", `{"properties":{"a":false}}`, []string{`{}`, `{"a":1}`, `{"b":1}`}},
}

// fastAnswer is what the fast path alone answers for data against s, and whether the
// library finds data valid.
func fastAnswer(s *Schema, data string) (fast answer, lib bool) {
	v, err := decode([]byte(data))
	if err != nil {
		return unsure, false
	}
	if s.fast != nil {
		fast = s.fast.eval(v, nil)
	}
	return fast, s.lib.Validate(v) == nil
}

// checkAgrees checks that the fast path says yes only to what the library accepts, and
// no only to what it rejects.
func checkAgrees(t *testing.T, s *Schema, data string) answer {
	t.Helper()
	fast, lib := fastAnswer(s, data)
	if fast == yes && !lib || fast == no && lib {
		t.Errorf("for %s the fast path answers %v, the library valid=%v", data, fast, lib)
	}
	return fast
}

func (a answer) String() string { return [...]string{"unsure", "yes", "no"}[a] }

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
				checkAgrees(t, s, v)
			}
		})
	}
}

// TestFastPathOverlap holds the cases where the fast path used to count an alternative it
// could not decide as not matching, and so accepted a value that matches two.
func TestFastPathOverlap(t *testing.T) {
	for _, tt := range []struct {
		name, schema, value string
		valid               bool
	}{
		{"1.0 is an integer", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1.0`, false},
		{"1e0 is an integer", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1e0`, false},
		{"100e-2 is an integer", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `100e-2`, false},
		{"1.5 is not", `{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1.5`, true},
		{"escaped string of 3", `{"oneOf":[{"type":"string"},{"maxLength":3}]}`, `"\u0061bc"`, false},
		{"surrogate pair is one code point", `{"oneOf":[{"type":"string"},{"maxLength":3}]}`, `"ab\ud83d\ude00"`, false},
		{"escaped string of 4", `{"oneOf":[{"type":"string"},{"maxLength":3}]}`, `"\u0061bcd"`, true},
		{"escaped string and pattern", `{"oneOf":[{"type":"string"},{"pattern":"^a"}]}`, `"\u0061"`, false},
		{"escaped string and const", `{"oneOf":[{"type":"string"},{"const":"é"}]}`, `"\u00e9"`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(raw(tt.value))
			if got := err == nil; got != tt.valid {
				t.Errorf("Validate(%s) = %v, want valid=%v", tt.value, err, tt.valid)
			}
			checkAgrees(t, s, tt.value)
		})
	}
}

// TestFastPathUsed checks that the fast path decides the values it exists for, and
// stays out of schemas whose refs it does not follow.
func TestFastPathUsed(t *testing.T) {
	for _, tt := range []struct {
		name, schema, value string
		want                answer
	}{
		{"tool call", toolSchema(0), toolCall(0), yes},
		{"solution", solutionSchema(10), solution(10, 10), yes},
		{"wrong type", toolSchema(0), `{"_tool":"tool0","customerId":"c","amount":"1"}`, no},
		{"nullable output", solutionSchema(1), `{"calls":[],"output":{"summary":"s"}}`, yes},
		{"format", `{"type":"string","format":"date-time"}`, `"2024-01-01T00:00:00Z"`, unsure},
		{"format on a number", `{"type":"string","format":"date-time"}`, `1`, no},
		{"number", `{"type":"number"}`, `1`, yes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if got := checkAgrees(t, s, tt.value); got != tt.want {
				t.Errorf("fast path answers %v for %s, want %v", got, tt.value, tt.want)
			}
		})
	}
	for _, schema := range []string{
		`{"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`{"$defs":{"a":{"$id":"http://example.com/a","$defs":{"b":true},"$ref":"#/$defs/b"}},"$ref":"#/$defs/a"}`,
		`{"$defs":{"a":{"$anchor":"x"}},"$ref":"#x"}`,
		`{"$dynamicAnchor":"m","items":{"$dynamicRef":"#m"}}`,
	} {
		s, err := Compile(raw(schema))
		if err != nil {
			t.Fatal(err)
		}
		if s.fast != nil {
			t.Errorf("%s has a fast path", schema)
		}
	}
	s, _ := Compile(raw(`{"type":"number"}`))
	if s.fast.eval(1.0, nil) != unsure {
		t.Error("the fast path decides a float64, which the library prints to compare")
	}
}

// FuzzFastPath checks, for any schema and value, that the fast path never answers what
// the library does not.
func FuzzFastPath(f *testing.F) {
	for _, tt := range fastSchemas {
		for _, v := range tt.values {
			f.Add(tt.schema, v)
		}
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		if len(schema) > 1<<12 {
			return
		}
		s, err := Compile(raw(schema))
		if err != nil {
			return
		}
		checkAgrees(t, s, value)
	})
}

// TestFastPathSuite checks the fast path against the library on the JSON Schema test
// suite, when JSON_SCHEMA_TEST_SUITE names a copy of its tests/draft2020-12 directory
// (https://github.com/json-schema-org/JSON-Schema-Test-Suite). The library, not the
// suite's expected result, is the reference: format is asserted here.
func TestFastPathSuite(t *testing.T) {
	dir := os.Getenv("JSON_SCHEMA_TEST_SUITE")
	if dir == "" {
		t.Skip("JSON_SCHEMA_TEST_SUITE is not set")
	}
	var skipped, cases, decided int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var groups []struct {
			Description string
			Schema      json.RawMessage
			Tests       []struct {
				Description string
				Data        json.RawMessage
			}
		}
		if err := json.Unmarshal(b, &groups); err != nil {
			return err
		}
		for _, g := range groups {
			s, err := Compile(g.Schema)
			if err != nil { // remote refs, which nothing loads
				skipped += len(g.Tests)
				continue
			}
			for _, c := range g.Tests {
				cases++
				if checkAgrees(t, s, string(c.Data)) != unsure {
					decided++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cases checked, %d decided by the fast path; %d skipped (schema does not compile)", cases, decided, skipped)
}
