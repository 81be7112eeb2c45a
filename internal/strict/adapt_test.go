package strict_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

// deepSchema returns an object schema whose objects nest n levels below
// the root.
func deepSchema(n int) string {
	s := `{"type":"string"}`
	for range n + 1 {
		s = `{"type":"object","properties":{"a":` + s + `},"required":["a"]}`
	}
	return s
}

// optionalSchema returns an object schema of n optional properties.
func optionalSchema(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string"}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// limitRules are the rules on sizes rather than keywords, and Anthropic's
// on recursion: a schema that breaks only these is sent with strict mode
// off.
var limitRules = []strict.Rule{strict.RuleDepth, strict.RulePropertyCount, strict.RuleStringSize,
	strict.RuleEnumCount, strict.RuleEnumSize, strict.RuleOptionalCount, strict.RuleUnionCount, strict.RuleRecursion}

// TestAdaptStrictLimits checks that schema.AdaptStrict says a schema is
// over its provider's limits exactly when the checker finds a limit
// broken, and that nothing else is broken.
func TestAdaptStrictLimits(t *testing.T) {
	enum := func(n, size int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("%q", fmt.Sprintf("%0*d", size, i))
		}
		return `{"type":"object","properties":{"e":{"enum":[` + strings.Join(vals, ",") + `]}},"required":["e"]}`
	}
	unions := func(n int) string {
		props := make([]string, n)
		names := make([]string, n)
		for i := range props {
			props[i] = fmt.Sprintf(`"u%d":{"type":["string","integer"]}`, i)
			names[i] = fmt.Sprintf(`"u%d"`, i)
		}
		return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(names, ",") + `]}`
	}
	for _, tt := range []struct {
		name    string
		dialect schema.Dialect
		schema  string
		over    bool
	}{
		{"openai: nested to the limit", schema.OpenAI, deepSchema(strict.OpenAIMaxDepth), false},
		{"openai: nested past the limit", schema.OpenAI, deepSchema(strict.OpenAIMaxDepth + 1), true},
		{"openai: nested past the limit in a definition", schema.OpenAI,
			`{"type":"object","properties":{"d":{"$ref":"#/$defs/deep"}},"required":["d"],"$defs":{"deep":` + deepSchema(strict.OpenAIMaxDepth+1) + `}}`, true},
		{"openai: enum values", schema.OpenAI, enum(strict.OpenAIMaxEnumValues+1, 1), true},
		{"openai: a large enum's size", schema.OpenAI, enum(strict.OpenAILargeEnum+1, 60), true},
		{"openai: a large enum within size", schema.OpenAI, enum(strict.OpenAILargeEnum+1, 5), false},
		{"openai: many optional properties", schema.OpenAI, optionalSchema(strict.AnthropicMaxOptional + 1), false},
		{"anthropic: optional properties to the limit", schema.Anthropic, optionalSchema(strict.AnthropicMaxOptional), false},
		{"anthropic: too many optional properties", schema.Anthropic, optionalSchema(strict.AnthropicMaxOptional + 1), true},
		{"anthropic: too many unions", schema.Anthropic, unions(strict.AnthropicMaxUnions + 1), true},
		{"anthropic: unions to the limit", schema.Anthropic, unions(strict.AnthropicMaxUnions), false},
		{"anthropic: deep", schema.Anthropic, deepSchema(strict.OpenAIMaxDepth + 1), false},
		{"anthropic: recursive", schema.Anthropic, recursiveSchema, true},
		{"anthropic: a definition used twice is no recursion", schema.Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"}},"required":["a","b"],"$defs":{"s":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}}`, false},
		{"openai: recursive", schema.OpenAI, recursiveSchema, false},
		{"gemini: required names no property", schema.Gemini,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			adapted, over, err := schema.AdaptStrict(json.RawMessage(tt.schema), tt.dialect)
			if err != nil {
				t.Fatalf("AdaptStrict: %v", err)
			}
			if (over != nil) != tt.over {
				t.Errorf("over = %v, want over: %v", over, tt.over)
			}
			var limits, others []string
			for _, v := range violations(t, strict.Check(tt.dialect, json.RawMessage(adapted))) {
				rule, _, _ := strings.Cut(v, "@")
				if slices.Contains(limitRules, strict.Rule(rule)) {
					limits = append(limits, v)
				} else {
					others = append(others, v)
				}
			}
			if len(others) > 0 {
				t.Errorf("violations other than limits: %q", others)
			}
			if (len(limits) > 0) != (over != nil) {
				t.Errorf("the checker finds %q; AdaptStrict says %v", limits, over)
			}
		})
	}
}

// recursiveSchema is a tree: strict OpenAI takes it, strict Anthropic not.
const recursiveSchema = `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"required":["root"],"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name","kids"]}}}`

// checkAdapted checks s adapted to d against d's provider: strict.Check,
// or strict.GeminiJSON for the responseJsonSchema dialect.
func checkAdapted(d schema.Dialect, s json.RawMessage) error {
	if d == schema.GeminiJSON {
		return strict.GeminiJSON(s)
	}
	return strict.Check(d, s)
}

// allDialects are the dialects of the strict providers, responseJsonSchema
// included.
var allDialects = append(dialects[:len(dialects):len(dialects)], schema.GeminiJSON)

// TestAdaptAccepted lists schemas whose adaptation each provider accepts,
// the fixed defects and their neighbours included.
func TestAdaptAccepted(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"required":["a"],"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","properties":{"code":{"type":"string","pattern":"^[1-9][0-9]*$","minLength":2,"format":"uuid"}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","format":"int32","minimum":1,"maximum":9},"x":{"type":"number","multipleOf":0.5}}}`,
		`{"type":"object","properties":{"o":{"type":"object","nullable":true,"properties":{"k":{"enum":["a","b"]}}},"l":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"integer"}]},"minItems":2,"maxItems":4}},"required":["o"]}`,
		`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"c":{"const":"k"},"all":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}}}`,
		// Fixed: an array without items (page 012's calls), optional and nullable too.
		`{"type":"object","properties":{"tags":{"type":"array"}},"required":["tags"]}`,
		`{"type":"object","properties":{"calls":{"type":"array"},"output":{"type":"object","nullable":true,"properties":{"m":{"type":"string"}}}}}`,
		// Fixed: free-form values, bare, described, constrained, optional, or true.
		`{"type":"object","properties":{"v":{}},"required":["v"]}`,
		`{"type":"object","properties":{"v":{"description":"anything","minLength":2},"w":{},"t":true,"items":{"type":"array","items":true}}}`,
		// Fixed: a $ref with siblings, required or optional.
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"the a"}},"required":["a"],"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s","title":"A","default":"x"}},"$defs":{"s":{"type":"string"}}}`,
		// Fixed: patterns beyond Claude's regular expressions.
		`{"type":"object","properties":{"code":{"type":"string","pattern":"^(?!0)[0-9]+$"},"w":{"type":"string","pattern":"\\bx\\b"},"r":{"type":"string","pattern":"(a)\\1"},"l":{"type":"string","pattern":"(?<=a)b"}}}`,
		// Fixed: integer formats on a number, and formats on the wrong type.
		`{"type":"object","properties":{"n":{"type":"number","format":"int32"},"i":{"type":"integer","format":"double"},"s":{"type":"string","format":"int64"}}}`,
		// Fixed: a const array (page 015's provisioned _scopes), and enums of other values.
		`{"type":"object","properties":{"_scopes":{"const":["input"]},"e":{"enum":[[],["a","b"]]},"m":{"enum":[1,true,null,"x"]},"o":{"const":{"k":[1,2]}}}}`,
		// Fixed: a free-form object, bare or nullable.
		`{"type":"object","properties":{"output":{"type":"object"},"meta":{"type":"object","nullable":true}},"required":["output"]}`,
		// properties without a type.
		`{"type":"object","properties":{"p":{"properties":{"a":{"type":"string"}}}}}`,
		// Fixed: required names of absent properties (Gemini).
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`,
	} {
		for _, d := range allDialects {
			adapted, err := schema.Adapt(json.RawMessage(s), d)
			if err != nil {
				if d == schema.Gemini && strings.Contains(s, `"output":{"type":"object"}`) {
					continue // an object with no properties: the provider sends it as responseJsonSchema
				}
				t.Errorf("%v: Adapt(%s): %v", d, s, err)
				continue
			}
			if err := checkAdapted(d, adapted); err != nil {
				t.Errorf("%v: %s\nadapted: %s\n%v", d, s, adapted, err)
			}
		}
	}
}

// TestAdaptGeminiJSON checks what responseJsonSchema needs beyond its
// keywords: refs alone, recursion only through properties that are not
// required, enums of strings and numbers, and draft-7 definitions.
func TestAdaptGeminiJSON(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"game":{"$ref":"#/$defs/g"}},"required":["game"],"$defs":{"g":{"type":"object","properties":{"next":{"$ref":"#/$defs/g"},"score":{"type":"integer"}},"required":["next","score"]}}}`,
		`{"type":"object","properties":{"child":{"$ref":"#","description":"the same again"},"n":{"type":"integer"}},"required":["child","n"]}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"$ref":"#/$defs/t"},{"type":"null"}]}},"required":["x"],"$defs":{"t":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/t"}},"up":{"$ref":"#/$defs/t"}},"required":["up"]}}}`,
		`{"type":"object","properties":{"d":{"$ref":"#/definitions/d"}},"definitions":{"d":{"type":"string","const":"k"}}}`,
		`{"type":"object","properties":{"mode":{"enum":["a",null,true]},"flag":{"const":false},"nothing":{"const":null}}}`,
	} {
		adapted, err := schema.Adapt(json.RawMessage(s), schema.GeminiJSON)
		if err != nil {
			t.Errorf("Adapt(%s): %v", s, err)
			continue
		}
		if err := strict.GeminiJSON(adapted); err != nil {
			t.Errorf("%s\nadapted: %s\n%v", s, adapted, err)
		}
		if _, err := schema.Compile(adapted); err != nil {
			t.Errorf("%s\nadapted: %s\ndoes not compile: %v", s, adapted, err)
		}
	}
}

// TestSpecSchemasAdaptGeminiJSON adapts each schema of the spec pages to
// responseJsonSchema's subset and checks it, as TestSpecSchemasAdapt does
// for the other dialects.
func TestSpecSchemasAdaptGeminiJSON(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "spec_schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Schemas []struct {
			Page, Name string
			Schema     json.RawMessage
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, ex := range file.Schemas {
		adapted, err := schema.Adapt(ex.Schema, schema.GeminiJSON)
		if err != nil {
			t.Errorf("%s %s: Adapt: %v", ex.Page, ex.Name, err)
			continue
		}
		if err := strict.GeminiJSON(adapted); err != nil {
			t.Errorf("%s %s: %v\nadapted: %s", ex.Page, ex.Name, err, adapted)
		}
	}
}
