package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// A registered tool that cannot be shaped still registers, and a run that
// offers it says why; a run that does not offer it is not affected.
func TestRegisteredToolShapeError(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("bad", json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`))
	reg.Tool("good", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[],"output":1}`), Registry: reg}
	_, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"bad"}]`))
	if err == nil || !strings.Contains(err.Error(), `tool "bad"`) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v, want one naming the tool and the missing definition", err)
	}
	if _, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"good"}]`)); err != nil {
		t.Fatal(err)
	}
}

// An _output written beside properties, where a validator ignores it, is
// refused, naming the tool: the tool would have no result to check, and a
// latent call nothing to produce.
func TestOutputBesideProperties(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("sum", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"_output":{"type":"integer"}}`))
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[],"output":1}`), Registry: reg}
	_, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"sum"}]`))
	if err == nil || !strings.Contains(err.Error(), `tool "sum": _output stands beside properties`) {
		t.Fatalf("err = %v, want one naming the tool and where _output belongs", err)
	}
}

// Which shape a run takes depends on what is bound when it runs: a tool
// registered before its activity is offered without _output once the
// activity is bound, and with it before.
func TestRegisteredToolShapeFollowsBinding(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"_output":{"type":"integer"}}}`))
	offersOutput := func() bool {
		p := scripted.Solutions(`{"calls":[],"output":1}`)
		cfg := agent.Config{Provider: p, Registry: reg}
		if _, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"t"}]`)); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(p.Requests()[0].Schema), `"_output"`)
	}
	if !offersOutput() {
		t.Error("a latent tool is offered without _output")
	}
	reg.Activity("t", agent.Bind(func(ctx context.Context, p struct{ X int }) (int, error) { return p.X, nil }))
	if offersOutput() {
		t.Error("a tool with code is offered with _output")
	}
}

// A schema that is not valid JSON Schema fails the request with an error
// that names its tool, or the output, and the place in the schema as the
// user wrote it, not in the composed schema the model is sent. A tool's
// _output, which only an activity's result meets, is reported as the
// schema at fault, not as a result that does not match it.
func TestInvalidSchemaNamesItsPart(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("good", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	reg.Tool("typo", json.RawMessage(`{"type":"object","properties":{"x":{"type":"strng"}}}`))
	reg.Tool("badOut", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"object","required":"n"}}}`))
	reg.Activity("badOut", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return agent.Value(map[string]int{"n": 1}) }))
	for _, tt := range []struct {
		name, schema, context string
		want                  []string
	}{
		{"tool", `{"type":"string"}`, `[{"type":"tool","tool":"good"},{"type":"tool","tool":"typo"}]`,
			[]string{`agent: tool "typo": schema: invalid schema: `, `at /properties/x/type`, `got "strng"`}},
		{"output", `{"type":"object","properties":{"a":{"minimum":"x"}}}`, `[{"type":"tool","tool":"good"}]`,
			[]string{`agent: output schema: schema: invalid schema: at /properties/a/minimum: expected number, got string`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[],"output":"x"}`), Registry: reg}
			_, err := agent.Run(context.Background(), cfg, json.RawMessage(tt.schema), ctxOf(t, tt.context))
			if !errors.Is(err, schema.ErrInvalidSchema) {
				t.Fatalf("err = %v, want schema.ErrInvalidSchema", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
	p := scripted.Solutions(`{"calls":[{"_tool":"badOut","_outputPath":"†state.n"}],"output":null}`, `{"calls":[],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"badOut"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := errorTexts(res.Log); len(got) != 1 || !strings.HasPrefix(got[0], `runtime error in badOut: the tool's _output: schema: invalid schema: at /required`) {
		t.Errorf("errors %q, want the tool's _output reported as invalid", got)
	}
}

// A tool whose ref points nowhere is named once in the error, as any
// other fault of its schema is.
func TestToolRefErrorNamesToolOnce(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("send", json.RawMessage(`{"type":"object","properties":{"to":{"$ref":"#/$defs/Who"}}}`))
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[],"output":"x"}`), Registry: reg}
	_, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"send"}]`))
	want := `agent: message 0 (tool): tool "send": schema: invalid ref: "#/$defs/Who" at /properties/to/$ref points nowhere`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
