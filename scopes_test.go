package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
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
	errs := errorTexts(res.Log)
	if len(errs) != 1 || !strings.Contains(errs[0], "never became ready") || !strings.Contains(errs[0], "outside the call's _scopes (input)") {
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

// A latent call of an instance that scopes a kind is shown that
// instance's data laid over the global data, as one data message without
// _instance: the request makes no calls, so what an instance overrides is
// no concern of its model (and two blocks cost more tokens than one).
func TestScopesLatentInstance(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("summarize", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"string"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"summarize","_instance":"a","_scopes":["state"],"_outputPath":"†state.summary"}],"output":null}`,
		`{"output":"short"}`,
		`{"calls":[],"output":"done"}`,
	)
	_, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"summarize"},{"type":"state","team":"x","text":"global"},
			{"type":"state","_instance":"a","text":"mine"},{"type":"state","_instance":"b","text":"theirs"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range p.Requests()[1].Messages {
		if strings.HasPrefix(m.Text, "## Data: ¶state") {
			blocks = append(blocks, m.Text)
		}
	}
	if want := "## Data: ¶state\n{\"team\":\"x\",\"text\":\"mine\"}"; len(blocks) != 1 || blocks[0] != want {
		t.Errorf("the latent request's state:\n%q\nwant\n%q", blocks, want)
	}
}

// TestScopedReferences checks what a scoped call's references resolve to:
// the kinds in scope as the log holds them (an instance's value, then the
// global one), the values of the references in scope, and nothing else.
func TestScopedReferences(t *testing.T) {
	const context0 = `[{"type":"tool","tool":"put"},{"type":"input","topic":"weather"},
		{"type":"state","secret":"s3cr3t","history":{"last":"v1"},"text":"global"},
		{"type":"state","_instance":"①","text":"Hello"}]`
	for _, tt := range []struct {
		name, call string
		want       string // the v the call got, "" when it never ran
	}{
		{"a kind", `"_scopes":["state"],"v":"†state.secret"`, `"s3cr3t"`},
		{"a kind, whole", `"_scopes":["input"],"v":"†input"`, `{"topic":"weather"}`},
		{"a kind, in an instance", `"_scopes":["state"],"_instance":"①","v":"†state.text"`, `"Hello"`},
		{"a kind, global under an instance", `"_scopes":["state"],"_instance":"①","v":"†state.secret"`, `"s3cr3t"`},
		{"a reference", `"_scopes":["†state.history"],"v":"†state.history.last"`, `"v1"`},
		{"above a reference", `"_scopes":["†state.history"],"v":"†state"`, `{"history":{"last":"v1"}}`},
		{"a reference, in an instance", `"_scopes":["†state.text"],"_instance":"①","v":"†state.text"`, `"Hello"`},
		{"beside a reference", `"_scopes":["†state.history"],"v":"†state.secret"`, ""},
		{"a kind and a reference", `"_scopes":["input","†state.history"],"v":["†input.topic","†state.history.last"]`, `["weather","v1"]`},
		{"a kind out of scope", `"_scopes":["input"],"v":"†state.secret"`, ""},
		{"a kind in scope with no data", `"_scopes":["memory"],"v":"†memory.x"`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{},"_scopes":{"type":"array","items":{"type":"string"}}}}`))
			var mu sync.Mutex
			var got []string
			reg.Activity("put", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
				var p struct{ V json.RawMessage }
				_ = json.Unmarshal(c.Args(), &p)
				mu.Lock()
				got = append(got, string(p.V))
				mu.Unlock()
				return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"put",` + tt.call + `}],"output":1}`)
			if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, context0)); err != nil {
				t.Fatal(err)
			}
			want := []string{tt.want}
			if tt.want == "" {
				want = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("the call got v %q, want %q", got, want)
			}
		})
	}
}

// TestScopedReferenceOutsideScopes checks the error of a scoped call whose
// reference lies outside its scopes: it says so, rather than that the
// context has no such data.
func TestScopedReferenceOutsideScopes(t *testing.T) {
	const context0 = `[{"type":"tool","tool":"put"},{"type":"input","topic":"weather"},
		{"type":"state","secret":"s3cr3t","history":{"last":"v1"}}]`
	for _, tt := range []struct {
		name, call, want string
	}{
		{"a kind out of scope", `"_scopes":["input"],"v":"†state.secret"`,
			`structural error in put: never became ready: param /v: ref "†state.secret": not found: outside the call's _scopes (input)`},
		{"beside a reference", `"_scopes":["input","†state.history"],"v":"†state.secret"`,
			`structural error in put: never became ready: param /v: ref "†state.secret": not found: outside the call's _scopes (input, †state.history)`},
		{"a kind in scope with no data", `"_scopes":["memory"],"v":"†memory.x"`,
			`structural error in put: never became ready: param /v: ref "†memory.x": not found: unknown kind "memory"`},
		// A scope is a reference too: one that does not resolve names itself.
		{"a scope with no value", `"_scopes":["†state.history.first"],"v":1`,
			`structural error in put: never became ready: _scopes: ref "†state.history.first" at path "history.first": not found`},
		{"a scope of a kind with no data", `"_scopes":["input","†memory.x"],"v":1`,
			`structural error in put: never became ready: _scopes: ref "†memory.x": not found: unknown kind "memory"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{},"_scopes":{"type":"array","items":{"type":"string"}}}}`))
			reg.Activity("put", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
				return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"put",` + tt.call + `}],"output":1}`)
			res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, context0))
			if err != nil {
				t.Fatal(err)
			}
			got := errorTexts(res.Log)
			if want := []string{tt.want}; !slices.Equal(got, want) {
				t.Errorf("errors:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// A tool provisions its scopes with a const of kinds and references, and
// lets the model request them from an enum of them. A const that is not
// such a list was ignored: the calls ran with no scopes at all, and the
// activity saw nothing of what the tool meant to give it. A scope that
// is neither a kind nor a reference failed every call. Both are an error
// of the tool's definition, naming it, before anything is sent.
func TestToolScopesMalformed(t *testing.T) {
	for _, tt := range []struct{ scopes, err string }{
		{`{"const":"state"}`, `agent: message 0 (tool): tool "t": _scopes: the const of a tool's _scopes is an array of kinds and references, got "state"`},
		{`{"const":["state","no kind"]}`, `agent: message 0 (tool): tool "t": _scopes: invalid scope "no kind": not a kind or a reference`},
		{`{"type":"array","items":{"enum":["state","†input.a || †input.b"]}}`, `agent: message 0 (tool): tool "t": _scopes: invalid scope "†input.a || †input.b": a scope names one reference`},
	} {
		t.Run(tt.scopes, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"_scopes":`+tt.scopes+`}}`))
			reg.Activity("t", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
				return &agent.Result{Value: json.RawMessage(`1`)}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"t","_outputPath":"†state.o"}],"output":null}`, `{"calls":[],"output":1}`)
			_, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`),
				ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"state","a":1}]`))
			if err == nil || err.Error() != tt.err {
				t.Errorf("got %v\nwant %s", err, tt.err)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestToolOutputMalformed: an _outputPath or _outputMethod a tool fixes
// (its const) or offers (its enum) that no call could use is an error of
// the tool's definition, before any request, rather than of every call.
func TestToolOutputMalformed(t *testing.T) {
	for _, tt := range []struct{ props, err string }{
		{`"_outputPath":{"const":"state.o"}`, `agent: message 0 (tool): tool "t": _outputPath "state.o": ref "state.o": syntax error: expected a reference starting with † but found "s"`},
		{`"_outputPath":{"enum":["†state.o","†state."]}`, `agent: message 0 (tool): tool "t": _outputPath "†state.": ref "†state." at offset 9: syntax error: empty path segment`},
		{`"_outputMethod":{"const":"append"}`, `agent: message 0 (tool): tool "t": _outputMethod "append": ref: unknown output method "append" (want set, merge, assign, push or concat)`},
	} {
		t.Run(tt.props, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("t", json.RawMessage(`{"type":"object","properties":{`+tt.props+`}}`))
			reg.Activity("t", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
				return &agent.Result{Value: json.RawMessage(`1`)}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"t","_outputPath":"†state.o"}],"output":null}`, `{"calls":[],"output":1}`)
			_, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`),
				ctxOf(t, `[{"type":"tool","tool":"t"}]`))
			if err == nil || err.Error() != tt.err {
				t.Errorf("got %v\nwant %s", err, tt.err)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
	// A const the tool fixes that is well formed runs.
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"_outputPath":{"const":"†state.a || †state.b"},"_outputMethod":{"enum":["set","push"]}}}`))
	reg.Activity("t", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`1`)}, nil
	}))
	p := scripted.Solutions(`{"calls":[{"_tool":"t","_outputPath":"†state.a || †state.b"}],"output":null}`, `{"calls":[],"output":1}`)
	if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"}]`)); err != nil {
		t.Fatal(err)
	}
}
