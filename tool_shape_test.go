package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider/scripted"
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
