package strict_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

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
		{"openai: an array without items", schema.OpenAI,
			`{"type":"object","properties":{"tags":{"type":"array"}},"required":["tags"]}`,
			[]string{"array-items@/properties/tags"}},
		{"openai: a free-form value", schema.OpenAI,
			`{"type":"object","properties":{"v":{}},"required":["v"]}`,
			[]string{"type-required@/properties/v"}},
		{"openai: a $ref with a description", schema.OpenAI,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"the a"}},"required":["a"],"$defs":{"s":{"type":"string"}}}`,
			[]string{"ref-siblings@/properties/a"}},
		{"anthropic: a pattern with a lookahead", schema.Anthropic,
			`{"type":"object","properties":{"code":{"type":"string","pattern":"^(?!0)[0-9]+$"}}}`,
			[]string{"pattern@/properties/code/pattern"}},
		{"gemini: an integer format on a number", schema.Gemini,
			`{"type":"object","properties":{"n":{"type":"number","format":"int32"}}}`,
			[]string{"format@/properties/n/format"}},
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

// TestAdaptAccepted lists schemas whose adaptation each provider accepts,
// the neighbours of the known defects included.
func TestAdaptAccepted(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"required":["a"],"$defs":{"s":{"type":"string"}}}`,
		`{"type":"object","properties":{"code":{"type":"string","pattern":"^[1-9][0-9]*$","minLength":2,"format":"uuid"}}}`,
		`{"type":"object","properties":{"n":{"type":"integer","format":"int32","minimum":1,"maximum":9},"x":{"type":"number","multipleOf":0.5}}}`,
		`{"type":"object","properties":{"o":{"type":"object","nullable":true,"properties":{"k":{"enum":["a","b"]}}},"l":{"type":"array","items":{"oneOf":[{"type":"string"},{"type":"integer"}]},"minItems":2,"maxItems":4}},"required":["o"]}`,
		`{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"c":{"const":"k"},"all":{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"integer"}}}]}}}`,
	} {
		for _, d := range dialects {
			adapted, err := schema.Adapt(json.RawMessage(s), d)
			if err != nil {
				t.Errorf("%v: Adapt(%s): %v", d, s, err)
				continue
			}
			if err := strict.Check(d, adapted); err != nil {
				t.Errorf("%v: %s\nadapted: %s\n%v", d, s, adapted, err)
			}
		}
	}
}
