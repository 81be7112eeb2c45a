package strict_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

// violations returns the rule@pointer of each violation err has.
func violations(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *strict.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *strict.Error", err)
	}
	var out []string
	for _, v := range e.Violations {
		out = append(out, string(v.Rule)+"@"+v.Pointer)
	}
	return out
}

type ruleCase struct {
	name   string
	schema string
	want   []string // rule@pointer of every violation; none to accept
}

func runRules(t *testing.T, check func(json.RawMessage) error, cases []ruleCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(t, check(json.RawMessage(tt.schema)))
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenAIRules(t *testing.T) {
	runRules(t, strict.OpenAI, []ruleCase{
		{"accepts a strict object", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer","null"],"minimum":1}},"required":["a","b"],"additionalProperties":false}`, nil},
		{"accepts an empty closed object", `{"type":"object","additionalProperties":false}`, nil},
		{"accepts enum, const, anyOf and $ref without type", `{"type":"object","properties":{"e":{"enum":["x",null]},"c":{"const":"k"},"u":{"anyOf":[{"type":"string"},{"type":"null"}]},"r":{"$ref":"#/$defs/s"}},"required":["e","c","u","r"],"additionalProperties":false,"$defs":{"s":{"type":"string","format":"date-time"}}}`, nil},
		{"accepts recursion", `{"type":"object","properties":{"n":{"$ref":"#"}},"required":["n"],"additionalProperties":false}`, nil},
		{"not JSON", `{"type":`, []string{"json@"}},
		{"root not an object", `{"type":"array","items":{"type":"string"}}`, []string{"root-object@"}},
		{"root anyOf", `{"anyOf":[{"type":"object","additionalProperties":false}]}`, []string{"root-anyof@", "root-object@"}},
		{"missing additionalProperties", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, []string{"additional-properties@"}},
		{"additionalProperties true", `{"type":"object","properties":{},"additionalProperties":true}`, []string{"additional-properties@/additionalProperties"}},
		{"nested object open", `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}},"required":["o"],"additionalProperties":false}`, []string{"additional-properties@/properties/o"}},
		{"optional property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, []string{"required-all@"}},
		{"extra required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","z"],"additionalProperties":false}`, []string{"required-unknown@/required"}},
		{"unsupported keyword", `{"type":"object","properties":{"a":{"type":"string","minLength":2,"default":"x"}},"required":["a"],"additionalProperties":false}`, []string{"keyword@/properties/a/minLength", "keyword@/properties/a/default"}},
		{"allOf and oneOf", `{"type":"object","properties":{"a":{"allOf":[{"type":"string"}]},"b":{"oneOf":[{"type":"string"}]}},"required":["a","b"],"additionalProperties":false}`, []string{"keyword@/properties/a/allOf", "type-required@/properties/a", "keyword@/properties/b/oneOf", "type-required@/properties/b"}},
		{"empty schema", `{"type":"object","properties":{"v":{}},"required":["v"],"additionalProperties":false}`, []string{"type-required@/properties/v"}},
		{"boolean schema", `{"type":"object","properties":{"v":true},"required":["v"],"additionalProperties":false}`, []string{"schema-object@/properties/v"}},
		{"unknown type", `{"type":"object","properties":{"v":{"type":"date"}},"required":["v"],"additionalProperties":false}`, []string{"type@/properties/v/type"}},
		{"unsupported format", `{"type":"object","properties":{"v":{"type":"string","format":"uri"}},"required":["v"],"additionalProperties":false}`, []string{"format@/properties/v/format"}},
		{"external ref", `{"type":"object","properties":{"v":{"$ref":"Other"}},"required":["v"],"additionalProperties":false}`, []string{"ref@/properties/v/$ref"}},
		{"dangling ref", `{"type":"object","properties":{"v":{"$ref":"#/$defs/none"}},"required":["v"],"additionalProperties":false}`, []string{"ref@/properties/v/$ref"}},
		{"ref with siblings", `{"type":"object","properties":{"v":{"$ref":"#/$defs/s","description":"d"}},"required":["v"],"additionalProperties":false,"$defs":{"s":{"type":"string"}}}`, []string{"ref-siblings@/properties/v"}},
		{"array without items", `{"type":"object","properties":{"v":{"type":["array","null"]}},"required":["v"],"additionalProperties":false}`, []string{"array-items@/properties/v"}},
		{"tuple items", `{"type":"object","properties":{"v":{"type":"array","items":[{"type":"string"}]}},"required":["v"],"additionalProperties":false}`, []string{"schema-object@/properties/v/items"}},
		{"too deep", nest(11), []string{"nesting-depth@" + strings.Repeat("/properties/o", 11)}},
		{"deep enough", nest(10), nil},
		{"too many properties", wide(5001), []string{"property-count@", "string-size@"}},
		{"too many enum values", enumOf(1001, 1), []string{"enum-count@"}},
		{"a large enum too long", enumOf(251, 60), []string{"enum-size@/properties/e/enum", "enum-size@/properties/f/enum"}},
	})
}

func TestAnthropicRules(t *testing.T) {
	runRules(t, strict.Anthropic, []ruleCase{
		{"accepts optional properties", `{"type":"object","properties":{"a":{"type":"string","format":"uri"},"b":{"type":"array","items":{"type":"integer"},"minItems":1}},"required":["a"],"additionalProperties":false}`, nil},
		{"accepts const, allOf and local refs", `{"type":"object","properties":{"c":{"const":"k"},"a":{"allOf":[{"type":"string"}]},"r":{"$ref":"#/$defs/s"}},"additionalProperties":false,"$defs":{"s":{"type":"string","pattern":"^[a-z]+$"}}}`, nil},
		{"root not an object", `{"type":"string"}`, []string{"root-object@"}},
		{"missing additionalProperties", `{"type":"object","properties":{"a":{"type":"object","properties":{}}},"additionalProperties":false}`, []string{"additional-properties@/properties/a"}},
		{"numeric and string bounds", `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},"s":{"type":"string","maxLength":3}},"additionalProperties":false}`, []string{"keyword@/properties/n/minimum", "keyword@/properties/n/maximum", "keyword@/properties/s/maxLength"}},
		{"minItems above 1 and maxItems", `{"type":"object","properties":{"a":{"type":"array","minItems":2,"maxItems":3}},"additionalProperties":false}`, []string{"keyword@/properties/a/maxItems", "min-items@/properties/a/minItems"}},
		{"unsupported format", `{"type":"object","properties":{"v":{"type":"string","format":"regex"}},"additionalProperties":false}`, []string{"format@/properties/v/format"}},
		{"complex enum", `{"type":"object","properties":{"v":{"enum":[{"a":1}]}},"additionalProperties":false}`, []string{"enum@/properties/v/enum"}},
		{"lookahead", `{"type":"object","properties":{"v":{"type":"string","pattern":"^(?=a)a$"}},"additionalProperties":false}`, []string{"pattern@/properties/v/pattern"}},
		{"backreference", `{"type":"object","properties":{"v":{"type":"string","pattern":"(a)\\1"}},"additionalProperties":false}`, []string{"pattern@/properties/v/pattern"}},
		{"word boundary", `{"type":"object","properties":{"v":{"type":"string","pattern":"\\bword"}},"additionalProperties":false}`, []string{"pattern@/properties/v/pattern"}},
		{"escapes in a class are fine", `{"type":"object","properties":{"v":{"type":"string","pattern":"^[\\b\\d]+\\.\\d$"}},"additionalProperties":false}`, nil},
		{"recursion", `{"type":"object","properties":{"n":{"$ref":"#/$defs/node"}},"additionalProperties":false,"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}},"additionalProperties":false}}}`, []string{"recursion@/$defs/node"}},
		{"external ref", `{"type":"object","properties":{"v":{"$ref":"https://example.com/s.json"}},"additionalProperties":false}`, []string{"ref@/properties/v/$ref"}},
		{"allOf with a ref", `{"type":"object","properties":{"v":{"allOf":[{"$ref":"#/$defs/s"}]}},"additionalProperties":false,"$defs":{"s":{"type":"string"}}}`, []string{"allof-ref@/properties/v/allOf"}},
		{"oneOf", `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"}]}},"additionalProperties":false}`, []string{"keyword@/properties/v/oneOf"}},
		{"24 optional parameters", optional(24, false), nil},
		{"25 optional parameters", optional(25, false), []string{"optional-parameters@"}},
		{"16 union parameters", optional(16, true), nil},
		{"17 union parameters", optional(17, true), []string{"union-parameters@"}},
	})
}

func TestAnthropicRequestLimitsAcrossSchemas(t *testing.T) {
	a, b := json.RawMessage(optional(13, false)), json.RawMessage(optional(12, false))
	if err := strict.AnthropicRequest(a); err != nil {
		t.Fatal(err)
	}
	got := violations(t, strict.AnthropicRequest(a, b))
	if strings.Join(got, " ") != "optional-parameters@" {
		t.Errorf("got %q, want the optional parameters of both counted", got)
	}
	got = violations(t, strict.AnthropicRequest(a, json.RawMessage(`{"type":"object","properties":{}}`)))
	if strings.Join(got, " ") != "additional-properties@/1" {
		t.Errorf("got %q, want the second schema's violation under /1", got)
	}
}

func TestGeminiRules(t *testing.T) {
	runRules(t, strict.Gemini, []ruleCase{
		{"accepts the OpenAPI subset", `{"type":"OBJECT","properties":{"a":{"type":"STRING","enum":["x","y"],"nullable":true},"n":{"type":"INTEGER","format":"int64","minimum":1},"l":{"type":"ARRAY","items":{"type":"NUMBER","format":"double"},"minItems":"1"},"u":{"anyOf":[{"type":"STRING"},{"type":"BOOLEAN"}]}},"required":["a"],"propertyOrdering":["a","n","l","u"]}`, nil},
		{"additionalProperties", `{"type":"OBJECT","properties":{"a":{"type":"STRING"}},"additionalProperties":false}`, []string{"keyword@/additionalProperties"}},
		{"$ref and $defs", `{"type":"OBJECT","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"STRING"}}}`, []string{"keyword@/properties/a/$ref", "keyword@/$defs"}},
		{"const", `{"type":"OBJECT","properties":{"a":{"const":"x"}}}`, []string{"keyword@/properties/a/const"}},
		{"type list", `{"type":"OBJECT","properties":{"a":{"type":["STRING","NULL"]}}}`, []string{"type@/properties/a/type"}},
		{"lower-case type", `{"type":"object","properties":{"a":{"type":"STRING"}}}`, []string{"type@/type"}},
		{"enum of numbers", `{"type":"OBJECT","properties":{"a":{"type":"INTEGER","enum":[1,2]}}}`, []string{"enum@/properties/a/enum"}},
		{"object without properties", `{"type":"OBJECT","properties":{"o":{"type":"OBJECT"}}}`, []string{"object-properties@/properties/o/properties"}},
		{"required unknown", `{"type":"OBJECT","properties":{"a":{"type":"STRING"}},"required":["b"]}`, []string{"required-unknown@/required"}},
		{"propertyOrdering unknown", `{"type":"OBJECT","properties":{"a":{"type":"STRING"}},"propertyOrdering":["a","b"]}`, []string{"property-ordering@/propertyOrdering"}},
		{"number format", `{"type":"OBJECT","properties":{"a":{"type":"NUMBER","format":"int32"}}}`, []string{"format@/properties/a/format"}},
		{"negative count", `{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"STRING"},"maxItems":-1}}}`, []string{"value@/properties/a/maxItems"}},
		{"boolean schema", `{"type":"OBJECT","properties":{"a":true}}`, []string{"schema-object@/properties/a"}},
	})
}

func TestGeminiJSONRules(t *testing.T) {
	runRules(t, strict.GeminiJSON, []ruleCase{
		{"accepts the supported keywords", `{"$defs":{"s":{"type":"string","format":"date-time"}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"type":["integer","null"],"minimum":0},"c":{"oneOf":[{"type":"string"},{"type":"array","prefixItems":[{"type":"string"}]}]},"d":{"enum":["x",2]}},"required":["a"],"additionalProperties":false,"propertyOrdering":["a","b","c","d"]}`, nil},
		{"recursion through optional properties", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, nil},
		{"recursion through a required property", `{"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]}`, []string{"recursion@/properties/next/$ref"}},
		{"ref with siblings", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"d","$comment":"ok"}},"$defs":{"s":{"type":"string"}}}`, []string{"keyword@/properties/a/$comment", "ref-siblings@/properties/a/description"}},
		{"unsupported keywords", `{"type":"object","properties":{"t":{"const":"x"},"p":{"type":"string","pattern":"^a"}}}`, []string{"keyword@/properties/t/const", "keyword@/properties/p/pattern"}},
		{"enum of booleans", `{"enum":[true]}`, []string{"enum@/enum"}},
	})
}

func TestCheckDialects(t *testing.T) {
	s := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	for _, tt := range []struct {
		d    schema.Dialect
		want string
	}{
		{schema.OpenAI, "additional-properties@ required-all@"},
		{schema.Anthropic, "additional-properties@"},
		{schema.Gemini, "type@/type type@/properties/a/type"},
	} {
		if got := violations(t, strict.Check(tt.d, s)); strings.Join(got, " ") != tt.want {
			t.Errorf("%v: got %q, want %q", tt.d, got, tt.want)
		}
	}
	if err := strict.Check(schema.Full, s); err == nil {
		t.Error("the full dialect has no strict rules, and Check must say so")
	}
}

func TestErrorText(t *testing.T) {
	err := strict.OpenAI(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`))
	want := "strict: openai rejects the schema:\n\trequired-all at the root: 'required' is required to be supplied and to be an array including every key in properties. Missing 'a'"
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	var e *strict.Error
	if !errors.As(err, &e) || !e.Has(strict.RuleRequiredAll, "") {
		t.Errorf("Has does not find the violation in %v", err)
	}
}

// nest returns a strict schema whose objects nest n levels below the root.
func nest(n int) string {
	s := `{"type":"object","properties":{},"additionalProperties":false}`
	for range n {
		s = `{"type":"object","properties":{"o":` + s + `},"required":["o"],"additionalProperties":false}`
	}
	return s
}

// wide returns a strict schema with n properties.
func wide(n int) string {
	var props, req []string
	for i := range n {
		name := "p" + strings.Repeat("x", 20) + itoa(i)
		props = append(props, `"`+name+`":{"type":"string"}`)
		req = append(req, `"`+name+`"`)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`
}

// enumOf returns a strict schema with two string enums of n values of size
// characters each.
func enumOf(n, size int) string {
	var vals []string
	for i := range n {
		v := itoa(i)
		v += strings.Repeat("v", max(size-len(v), 0))
		vals = append(vals, `"`+v+`"`)
	}
	e := `{"enum":[` + strings.Join(vals, ",") + `]}`
	if size == 1 {
		return `{"type":"object","properties":{"e":` + e + `},"required":["e"],"additionalProperties":false}`
	}
	return `{"type":"object","properties":{"e":` + e + `,"f":` + e + `},"required":["e","f"],"additionalProperties":false}`
}

// optional returns a closed schema with n optional properties, unions when
// union is set.
func optional(n int, union bool) string {
	var props []string
	for i := range n {
		s := `{"type":"string"}`
		if union {
			s = `{"type":["string","null"]}`
		}
		props = append(props, `"p`+itoa(i)+`":`+s)
	}
	req := "[]"
	if union {
		var names []string
		for i := range n {
			names = append(names, `"p`+itoa(i)+`"`)
		}
		req = "[" + strings.Join(names, ",") + "]"
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":` + req + `,"additionalProperties":false}`
}

func itoa(i int) string { return strconv.Itoa(i) }
