package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/schema"
)

// withAdvice is a step whose solution carries the advisors' entries
// given, and the calls given (each with every meta-property offered).
func withAdvice(advisors string, calls ...strict.Call) strictStep {
	return func(s json.RawMessage) (json.RawMessage, error) {
		sol, err := strict.Solution(s, nil, calls...)
		if err != nil {
			return nil, err
		}
		o, err := ojson.Parse(sol)
		if err != nil {
			return nil, err
		}
		o.Set("advisors", json.RawMessage(advisors))
		return o.Bytes(), nil
	}
}

// TestStrictAdvisors runs page 017's worked example through each
// adapter: the advisors reach a strict provider before the calls, the
// model votes deploy 10, rollback 5, delay 95 and calls deploy and delay
// with every meta-property; the tally refuses deploy and delay runs. The
// on-demand advisors are offered through ConsultAdvisor, each answering
// with its own schema.
func TestStrictAdvisors(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		var mu sync.Mutex
		var ran []string
		for _, n := range []string{"deploy", "rollback", "delay"} {
			reg.Tool(n, json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`))
			reg.Activity(n, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				ran = append(ran, n)
				return agent.Value(n + "ed")
			}))
		}
		ctx := `[{"type":"tool","tool":"deploy"},{"type":"tool","tool":"rollback"},{"type":"tool","tool":"delay"},
			{"type":"state","deploymentHistory":[{"version":"v1","ok":true}]},
			{"type":"advisor","id":"riskAnalyst","on":"request","scopes":["†state.deploymentHistory"],"role":"Analyze risks and Vote for deployment actions.",
			 "schema":{"type":"object","properties":{"thought":{"type":"string","description":"Risk assessment of the deployment."}},"required":["thought"]}},
			{"type":"advisor","id":"securityArchitect","role":"Review security.",
			 "schema":{"type":"object","properties":{"severity":{"enum":["low","high"]}},"required":["severity"]}},
			{"type":"advisor","id":"costAnalyst","role":"Weigh the cost."}]`
		votes := `[{"id":"riskAnalyst","thought":"The new feature lacks integration tests. High risk of regression.","calls":"{\"deploy\": 10, \"rollback\": 5, \"delay\": 95}"}]`
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`, ctx, true,
			withAdvice(votes,
				strict.Call{Tool: "deploy", Set: set("_reasoningForCall", `"ship it"`, "_outputPath", `"†state.deployed"`)},
				strict.Call{Tool: "delay", Set: set("_reasoningForCall", `"RiskAnalyst strongly advises delaying due to insufficient testing."`, "_outputPath", `"†state.decision"`)}),
			func(s json.RawMessage) (json.RawMessage, error) {
				sol, err := withAdvice(`[{"id":"riskAnalyst","thought":"Delayed.","calls":"{}"}]`)(s)
				if err != nil {
					return nil, err
				}
				o, _ := ojson.Parse(sol)
				o.Set("output", json.RawMessage(`{"status":"delayed"}`))
				return o.Bytes(), nil
			})
		if strings.Join(ran, ",") != "delay" {
			t.Errorf("ran %v, want delay only", ran)
		}
		if errs := errorTexts(res.Log); len(errs) != 1 || !strings.Contains(errs[0], "the advisors voted against deploy") {
			t.Errorf("errors %q", errs)
		}
		if len(res.Advice) != 1 || res.Advice[0].ID != "riskAnalyst" {
			t.Errorf("advice %+v", res.Advice)
		}
		if string(res.Solution.Output) != `{"status":"delayed"}` {
			t.Errorf("output %s", res.Solution.Output)
		}
		sent := string(m.schemas()[0])
		if i, j := strings.Index(sent, `"advisors"`), strings.Index(sent, `"calls"`); i < 0 || j < 0 || i > j {
			t.Errorf("advisors must come before calls in the schema the provider got: %s", sent)
		}
		if !strings.Contains(sent, "ConsultAdvisor") || !strings.Contains(sent, "riskAnalyst") || !strings.Contains(sent, "_reasoningForCall") {
			t.Errorf("schema the provider got: %s", sent)
		}
	})
}

// riskNote is an advisor's answer with a type of its own that nests: its
// schema has definitions ($defs), as schema.For makes of a recursive type.
type riskNote struct {
	Risk  string     `json:"risk"`
	Cause []riskNote `json:"cause"`
}

// An advisor's schema may have definitions of its own: one written with
// $defs, one made by schema.For from a recursive type, and an on-demand
// one reached through ConsultAdvisor. Each reaches the provider with its
// refs resolving in the composed schema, and its entries are checked
// against it. Recursion sends the schema as in TestStrictRecursiveTool:
// Anthropic gets a forced tool, Gemini responseJsonSchema.
func TestStrictAdvisorDefinitions(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		reg.Tool("deploy", json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}`))
		reg.Activity("deploy", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) { return agent.Value("deployed") }))
		reg.Advisor(message.Advisor{ID: "causes", Role: "Trace the causes of each risk."}, schema.For[riskNote]())
		ctx := `[{"type":"tool","tool":"deploy"},
			{"type":"advisor","id":"risk","role":"Weigh the risks.","on":"request",
			 "schema":{"type":"object","$defs":{"Risk":{"type":"object","properties":{"level":{"enum":["low","high"]},"note":{"type":"string"}},"required":["level"]}},"properties":{"risks":{"type":"array","items":{"$ref":"#/$defs/Risk"}}},"required":["risks"]}},
			{"type":"advisor","advisor":"causes","on":"request"},
			{"type":"advisor","id":"security","role":"Review security.",
			 "schema":{"type":"object","definitions":{"Finding":{"type":"object","properties":{"what":{"type":"string"}},"required":["what"]}},"properties":{"findings":{"type":"array","items":{"$ref":"#/definitions/Finding"}}},"required":["findings"]}}]`
		votes := `[{"id":"risk","risks":[{"level":"low"}],"calls":"{\"deploy\": 1}"},{"id":"causes","risk":"outage","cause":[{"risk":"load","cause":[]}],"calls":"{\"deploy\": 1}"}]`
		field, isStrict := a.field, true
		switch a.name {
		case "anthropic":
			field, isStrict = "tools/solution", false
		case "gemini":
			field = "responseJsonSchema"
		}
		res, m := strictRunIn(t, a, field, isStrict, reg, `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`, ctx, true,
			withAdvice(votes,
				strict.Call{Tool: "deploy", Set: set("env", `"prod"`, "_outputPath", `"†state.deployed"`)},
				strict.Call{Tool: agent.ConsultAdvisor, Set: set("advisor", `"security"`, "question", `"Safe?"`, "_outputPath", `"†state.review"`, "_output", `{"id":"security","findings":[{"what":"an open port"}],"calls":"{}"}`)}),
			func(s json.RawMessage) (json.RawMessage, error) {
				sol, err := withAdvice(`[{"id":"risk","risks":[{"level":"low","note":null}],"calls":"{}"},{"id":"causes","risk":"none","cause":[],"calls":"{}"}]`)(s)
				if err != nil {
					return nil, err
				}
				o, _ := ojson.Parse(sol)
				o.Set("output", json.RawMessage(`{"status":"done"}`))
				return o.Bytes(), nil
			})
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
		if got := strictValue(t, res.Log, "", "†state.deployed"); got != `"deployed"` {
			t.Errorf("state.deployed = %s", got)
		}
		if got := strictValue(t, res.Log, "", "†state.review.id"); got != `"security"` {
			t.Errorf("state.review = %s", strictValue(t, res.Log, "", "†state.review"))
		}
		// The null a strict model writes for a note left out is taken out,
		// as from a call.
		if len(res.Advice) != 2 || string(res.Advice[0].Raw) != `{"id":"risk","risks":[{"level":"low"}],"calls":"{}"}` ||
			string(res.Advice[1].Raw) != `{"id":"causes","risk":"none","cause":[],"calls":"{}"}` {
			t.Errorf("advice %+v", res.Advice)
		}
		if s := string(m.schemas()[0]); !strings.Contains(s, `"advisor.risk.Risk"`) || !strings.Contains(s, `advisor.security.Finding"`) {
			t.Errorf("the advisors' definitions are not named after them: %s", s)
		}
	})
}
