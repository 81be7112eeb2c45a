package strict_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// TestAdaptKnownDefects pins what schema.Adapt lets through that the
// providers' rules do not accept. Each case is a defect of Adapt: when
// one is fixed, its case fails and moves to the accepted ones.
func TestAdaptKnownDefects(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dialect schema.Dialect
		schema  string
		want    []string // rule@pointer of the adapted schema's violations
	}{
		{"openai: objects nested past the limit", schema.OpenAI, deepSchema(strict.OpenAIMaxDepth + 1),
			[]string{"nesting-depth@" + strings.Repeat("/properties/a", strict.OpenAIMaxDepth+1)}},
		{"anthropic: too many optional properties", schema.Anthropic, optionalSchema(strict.AnthropicMaxOptional + 1),
			[]string{"optional-parameters@"}},
		{"gemini: required names no property", schema.Gemini,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
			[]string{"required-unknown@/required"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			adapted, err := schema.Adapt(json.RawMessage(tt.schema), tt.dialect)
			if err != nil {
				t.Fatalf("Adapt: %v", err)
			}
			got := violations(t, strict.Check(tt.dialect, adapted))
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("violations %q, want %q\nadapted: %s", got, tt.want, adapted)
			}
		})
	}
}

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
