package agent_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider/scripted"
)

func TestAdvisors(t *testing.T) {
	// Page 017: a riskAnalyst on every request votes before the calls; an
	// on-demand advisor is reached through ConsultAdvisor.
	reg := agent.NewRegistry()
	for _, n := range []string{"deploy", "rollback", "delay"} {
		reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		reg.Activity(n, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
		}))
	}
	p := scripted.Solutions(`{"advisors":[{"id":"riskAnalyst","thought":"The new feature has passed unit tests but lacks integration tests. High risk of regression.","calls":"{\"deploy\": 10, \"rollback\": 5, \"delay\": 95}"}],
		"calls":[{"_tool":"delay","_reasoningForCall":"RiskAnalyst strongly advises delaying due to insufficient testing.","_outputPath":"†state.decision"}],"output":{"status":"delayed"}}`)
	var ops []agent.Opinion
	var res *agent.RunResult
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[
		{"type":"tool","tool":"deploy"},{"type":"tool","tool":"rollback"},{"type":"tool","tool":"delay"},
		{"type":"state","deploymentHistory":[{"version":"v1","ok":true}]},
		{"type":"advisor","id":"riskAnalyst","on":"request","scopes":["†state.deploymentHistory"],"role":"Analyze risks and Vote for deployment actions.",
		 "schema":{"type":"object","properties":{"thought":{"type":"string","description":"Risk assessment of the deployment."}},"required":["thought"]}},
		{"type":"advisor","id":"securityArchitect","role":"Review security."}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventAdvice {
			ops = ev.Opinions
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	if len(ops) != 1 || ops[0].ID != "riskAnalyst" || ops[0].Votes["delay"] != 95 {
		t.Fatalf("opinions %+v", ops)
	}
	if res == nil || len(res.Advice) != 1 || res.Advice[0].Votes["deploy"] != 10 {
		t.Errorf("the result does not carry the advice: %+v", res)
	}
	tally := agent.Tally(ops)
	if math.Abs(tally["delay"]-95.0/110) > 1e-9 {
		t.Errorf("tally %v", tally)
	}
	sent := p.Requests()[0]
	schema := string(sent.Schema)
	if i, j := strings.Index(schema, `"advisors"`), strings.Index(schema, `"calls"`); i < 0 || j < 0 || i > j {
		t.Errorf("advisors must come before calls in the schema: %s", schema)
	}
	if !strings.Contains(schema, `"riskAnalyst"`) || strings.Contains(schema, `{"const":"securityArchitect"}`) || !strings.Contains(schema, `"ConsultAdvisor"`) {
		t.Errorf("schema: %s", schema)
	}
	var text strings.Builder
	for _, m := range sent.Messages {
		text.WriteString(m.Text + "\n")
	}
	if !strings.Contains(text.String(), "## Advisor: riskAnalyst") || !strings.Contains(text.String(), "Focus on: †state.deploymentHistory") ||
		!strings.Contains(text.String(), "Consult this advisor with the ConsultAdvisor tool") {
		t.Errorf("rendered:\n%s", text.String())
	}
}

func TestAdvisorPhasesAndInstances(t *testing.T) {
	ctx := `[{"type":"state","_instance":"①","x":1},{"type":"state","_instance":"②","x":2},
		{"type":"advisor","id":"opener","on":"start","role":"Sets direction."},
		{"type":"advisor","id":"closer","on":"finish","role":"Decides when to stop."},
		{"type":"advisor","id":"perItem","on":"request","isInstanced":true,"role":"Judges each item."}]`
	p := scripted.Solutions(`{"advisors":[{"id":"opener","calls":"{}"},{"id":"perItem","_instance":"①","calls":"{\"a\":1}"},{"id":"perItem","_instance":"②","calls":"{\"b\":1}"}],"output":1}`)
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{}`), ctxOf(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	schema := string(p.Requests()[0].Schema)
	if !strings.Contains(schema, `"opener"`) || strings.Contains(schema, `"closer"`) || !strings.Contains(schema, `"enum":["①","②"]`) {
		t.Errorf("first step schema: %s", schema)
	}
	ops, err := resp.Solutions[0].Opinions()
	if err != nil || len(ops) != 3 || ops[2].Instance != "②" {
		t.Errorf("opinions %+v %v", ops, err)
	}
	// After a step (a plan in the context) the finish advisor speaks and
	// the start one is quiet.
	p2 := scripted.Solutions(`{"advisors":[{"id":"closer","calls":"{}"},{"id":"perItem","_instance":"①","calls":"{}"}],"output":1}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p2, Registry: agent.NewRegistry()}, json.RawMessage(`{}`),
		ctxOf(t, strings.Replace(ctx, `[{"type":"state"`, `[{"type":"plan","plan":[]},{"type":"state"`, 1))); err != nil {
		t.Fatal(err)
	}
	schema = string(p2.Requests()[0].Schema)
	if strings.Contains(schema, `"opener"`) || !strings.Contains(schema, `"closer"`) {
		t.Errorf("later step schema: %s", schema)
	}
	bad := agent.Solution{Raw: json.RawMessage(`{"advisors":[{"id":"x","calls":"not json"}]}`)}
	if _, err := bad.Opinions(); err == nil || !strings.Contains(err.Error(), `advisor "x"`) {
		t.Errorf("bad votes: %v", err)
	}
}
