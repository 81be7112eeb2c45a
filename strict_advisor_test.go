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
