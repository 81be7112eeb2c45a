package strict_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

func TestExample(t *testing.T) {
	for _, tt := range []struct {
		name, schema, want string
	}{
		{"const", `{"const":["input"]}`, `["input"]`},
		{"enum skips null", `{"enum":[null,"b","c"]}`, `"b"`},
		{"enum of null", `{"enum":[null]}`, `null`},
		{"nullable type list", `{"type":["null","integer"],"minimum":3}`, `3`},
		{"anyOf skips null", `{"anyOf":[{"type":"null"},{"type":"boolean"}]}`, `true`},
		{"object in order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"number","exclusiveMinimum":1}}}`, `{"z":"example","a":2}`},
		{"array bounds", `{"type":"array","items":{"type":"string","format":"date"},"minItems":2,"maxItems":2}`, `["2025-10-26","2025-10-26"]`},
		{"empty array", `{"type":"array","items":{"type":"string"},"maxItems":0}`, `[]`},
		{"pattern", `{"type":"string","pattern":"^†"}`, `"†state.example"`},
		{"min length", `{"type":"string","minLength":10}`, `"examplexxx"`},
		{"ref", `{"$defs":{"d":{"type":"string","format":"uuid"}},"$ref":"#/$defs/d"}`, `"123e4567-e89b-12d3-a456-426614174000"`},
		{"gemini types", `{"type":"OBJECT","properties":{"n":{"type":"INTEGER","nullable":true},"s":{"type":"STRING","enum":["x"]},"l":{"type":"ARRAY","items":{"type":"BOOLEAN"},"minItems":"1"}}}`, `{"n":1,"s":"x","l":[true]}`},
		{"no type", `{"description":"anything"}`, `"example"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strict.Example(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`false`, `{"type":"string","pattern":"^[0-9]{3}$"}`, `{"type":"date"}`, `{"$ref":"#"}`} {
		if got, err := strict.Example(json.RawMessage(bad)); err == nil {
			t.Errorf("Example(%s) = %s, want an error", bad, got)
		}
	}
}

func TestSolution(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.String(), func(t *testing.T) {
			adapted, err := schema.Adapt(json.RawMessage(composed), d)
			if err != nil {
				t.Fatal(err)
			}
			tools, err := strict.Tools(adapted)
			if err != nil || !slices.Equal(tools, []string{"put", "guess"}) {
				t.Fatalf("tools %q, %v", tools, err)
			}
			offered, err := strict.Offered(adapted, "guess")
			if err != nil || !slices.Equal(offered, []string{"_reasoningForCall", "_tool", "q", "_output", "_scopes", "_outputPath", "_outputMethod"}) {
				t.Errorf("guess offers %q, %v", offered, err)
			}
			sol, err := strict.Solution(adapted, json.RawMessage(`{"x":"done"}`),
				strict.Call{Tool: "guess", Set: map[string]json.RawMessage{"_outputMethod": json.RawMessage(`"push"`), "_scopes": json.RawMessage(`null`)}},
				strict.Call{Tool: "put", Set: map[string]json.RawMessage{"v": json.RawMessage(`"†state.n"`), "_instance": json.RawMessage(`"b"`)}})
			if err != nil {
				t.Fatal(err)
			}
			// A null _scopes is null where the dialect makes it
			// nullable (OpenAI), and left out where it is optional.
			scopes := `"_scopes":null,`
			if d != schema.OpenAI {
				scopes = ``
			}
			want := `{"calls":[` +
				`{"_reasoningForCall":"The task needs guess now.","_tool":"guess","q":"example","_output":{"n":1},` + scopes + `"_outputPath":"†state.guess","_outputMethod":"push"},` +
				`{"_reasoningForCall":"The task needs put now.","_tool":"put","v":"†state.n","_outputPath":"†state.put","_outputMethod":"set","_instance":"b"}],` +
				`"output":{"x":"done"}}`
			if string(sol) != want {
				t.Errorf("got\n%s\nwant\n%s", sol, want)
			}
			s, err := schema.NewRegistry().CompileFor(json.RawMessage(composed), d)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(sol); err != nil {
				t.Errorf("the solution breaks the composed schema: %v", err)
			}
		})
	}
}

func TestSolutionErrors(t *testing.T) {
	adapted, err := schema.Adapt(json.RawMessage(composed), schema.Anthropic)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		call strict.Call
		want string
	}{
		{"unknown tool", strict.Call{Tool: "nope"}, `offers no tool "nope"`},
		{"unknown property", strict.Call{Tool: "put", Set: map[string]json.RawMessage{"w": json.RawMessage(`1`)}}, `tool "put" offers no property "w"`},
		{"null for a required property", strict.Call{Tool: "put", Set: map[string]json.RawMessage{"v": json.RawMessage(`null`)}}, `"v" is required and cannot be null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := strict.Solution(adapted, nil, tt.call)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
	if _, err := strict.Solution(json.RawMessage(`{"type":"object","properties":{"output":{}}}`), nil, strict.Call{Tool: "put"}); err == nil {
		t.Error("calls asked of a schema without calls")
	}
	if p, err := strict.Property(adapted, "output"); err != nil || !strings.HasPrefix(string(p), `{"type":["object","null"]`) {
		t.Errorf("Property: %s, %v", p, err)
	}
}
