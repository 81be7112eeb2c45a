package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// peek is an activity that records what it was given to see.
type peek struct {
	mu   sync.Mutex
	seen map[string]string // call params → its context, as JSON
}

func (p *peek) Run(ctx context.Context, c *agent.Call) (*agent.Result, error) {
	var b strings.Builder
	for _, m := range c.Context() {
		j, _ := m.MarshalJSON()
		b.Write(j)
	}
	p.mu.Lock()
	p.seen[string(c.Args())] = b.String()
	p.mu.Unlock()
	return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
}

func TestScopes(t *testing.T) {
	const secret = "s3cr3t"
	context0 := `[
		{"type":"tool","tool":"provisioned"},{"type":"tool","tool":"requested"},{"type":"tool","tool":"bare"},
		{"type":"input","topic":"weather"},
		{"type":"state","secret":"` + secret + `","deploymentHistory":{"last":"v1"}},
		{"type":"state","_instance":"①","text":"Hello"},
		{"type":"state","_instance":"②","text":"Bonjour ` + secret + `"}]`
	reg := agent.NewRegistry()
	reg.Tool("provisioned", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"_scopes":{"const":["input"]}}}`))
	reg.Tool("requested", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"_scopes":{"type":"array","items":{"enum":["state","input","†state.deploymentHistory"]}}}}`))
	reg.Tool("bare", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"v":{}}}`))
	pk := &peek{seen: map[string]string{}}
	for _, n := range []string{"provisioned", "requested", "bare"} {
		reg.Activity(n, pk)
	}
	p := scripted.Solutions(`{"calls":[
		{"_tool":"provisioned","n":1},
		{"_tool":"requested","n":2,"_scopes":["input"]},
		{"_tool":"requested","n":3,"_scopes":["state"],"_instance":"①"},
		{"_tool":"requested","n":4,"_scopes":["†state.deploymentHistory"]},
		{"_tool":"bare","n":5},
		{"_tool":"requested","n":6,"_scopes":["input"],"v":"†state.secret"}
	],"output":1}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, context0))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args, want string
	}{
		{`{"n":1}`, `{"type":"data","kind":"input","data":{"topic":"weather"}}`},                                                                                                         // provisioned even when the call names none
		{`{"n":2}`, `{"type":"data","kind":"input","data":{"topic":"weather"}}`},                                                                                                         // requested input only
		{`{"n":3}`, `{"type":"data","kind":"state","data":{"deploymentHistory":{"last":"v1"},"secret":"s3cr3t"}}{"type":"data","kind":"state","_instance":"①","data":{"text":"Hello"}}`}, // global and its own instance, never ②
		{`{"n":4}`, `{"type":"data","kind":"state","data":{"deploymentHistory":{"last":"v1"}}}`},                                                                                         // just the path
		{`{"n":5}`, ``}, // no scopes: nothing
	} {
		got, ok := pk.seen[tt.args]
		if !ok {
			t.Errorf("call %s did not run", tt.args)
			continue
		}
		if got != tt.want {
			t.Errorf("call %s saw\n%s\nwant\n%s", tt.args, got, tt.want)
		}
	}
	for args, seen := range pk.seen {
		if strings.Contains(seen, "Bonjour") || (args != `{"n":3}` && strings.Contains(seen, secret)) || strings.Contains(args, secret) {
			t.Errorf("call %s reached unscoped data: %s", args, seen)
		}
	}
	// A reference outside the call's scopes does not resolve: the call
	// never runs and the model is told why.
	if _, ran := pk.seen[`{"n":6,"v":"s3cr3t"}`]; ran {
		t.Error("a scoped call read an unscoped reference")
	}
	var errs []string
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeError {
			errs = append(errs, m.Error)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "never became ready") || !strings.Contains(errs[0], `unknown kind "state"`) {
		t.Errorf("errors %q", errs)
	}
}

func TestScopesFocusLatentCalls(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("summarize", json.RawMessage(`{"type":"object","properties":{"_scopes":{"const":["†state.report"]},"_output":{"type":"string"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"summarize","_outputPath":"†state.summary"}],"output":null}`,
		`{"output":"short"}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"summarize"},{"type":"state","report":{"body":"long text"},"private":"zzz"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, m := range p.Requests()[1].Messages {
		text.WriteString(m.Text + "\n")
	}
	got := text.String()
	if !strings.Contains(got, "Focus on the data below") || !strings.Contains(got, "long text") || strings.Contains(got, "zzz") {
		t.Errorf("latent request:\n%s", got)
	}
	if lookup(t, res.Log, "†state.summary") != `"short"` {
		t.Error("summary not written")
	}
}
