package agent_test

// Review B: does every request of a run extend the one before it, byte
// for byte, under the default rendering (RenderCached)?

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
)

// firstDiff describes where two strings part, with a little context.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("at byte %d:\n    before: …%q\n    after:  …%q", i, a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
}

// prefixBreaks returns, for each request that does not extend the one
// before it (composed schema equal, every message of the earlier one
// unchanged at the start, roles and texts; Stable ignored), what the
// first difference is.
func prefixBreaks(reqs []provider.Request) []string {
	var out []string
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if string(prev.Schema) != string(cur.Schema) {
			out = append(out, fmt.Sprintf("request %d: composed schema changed (%d → %d bytes) %s", i+1, len(prev.Schema), len(cur.Schema), firstDiff(string(prev.Schema), string(cur.Schema))))
		}
		if string(prev.Schema) == string(cur.Schema) && prev.CacheKey != cur.CacheKey {
			out = append(out, fmt.Sprintf("request %d: cache key %q after %q", i+1, cur.CacheKey, prev.CacheKey))
		}
		for k := range prev.Messages {
			if k >= len(cur.Messages) {
				out = append(out, fmt.Sprintf("request %d: has %d messages, the request before %d", i+1, len(cur.Messages), len(prev.Messages)))
				break
			}
			p, c := prev.Messages[k], cur.Messages[k]
			if p.Role != c.Role || p.Text != c.Text {
				out = append(out, fmt.Sprintf("request %d: message %d of %d changed (%s → %s) %s\n    request %d message %d was:\n%s\n    now:\n%s",
					i+1, k+1, len(prev.Messages), p.Role, c.Role, firstDiff(p.Text, c.Text), i, k+1, indentText(p.Text), indentText(c.Text)))
				break
			}
		}
	}
	return out
}

func indentText(s string) string {
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return "      | " + strings.ReplaceAll(s, "\n", "\n      | ")
}

// checkExtends fails t for each request that does not extend the one
// before.
func checkExtends(t *testing.T, reqs []provider.Request) {
	t.Helper()
	if len(reqs) < 2 {
		t.Fatalf("only %d requests", len(reqs))
	}
	for _, b := range prefixBreaks(reqs) {
		t.Error(b)
	}
}

// checkLoopExtends checks that the run's reqs hold n requests of the loop
// itself, and that each of them extends the one before.
func checkLoopExtends(t *testing.T, reqs []provider.Request, n int) {
	t.Helper()
	loop := loopRequests(reqs)
	if len(loop) != n {
		t.Fatalf("%d loop requests of %d, want %d", len(loop), len(reqs), n)
	}
	checkExtends(t, loop)
}

// loopRequests keeps the requests of the loop itself, not those of
// latent calls or delegates (their own, isolated contexts): those whose
// first message is the loop's.
func loopRequests(reqs []provider.Request) []provider.Request {
	var out []provider.Request
	for _, r := range reqs {
		if len(out) == 0 || len(r.Messages) > 0 && r.Messages[0].Text == out[0].Messages[0].Text {
			out = append(out, r)
		}
	}
	return out
}

var anyOut = json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)

// echoReg is a registry with the tool put, which returns its v.
func echoReg() *agent.Registry {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","description":"Returns v.","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("put", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct {
			V json.RawMessage `json:"v"`
		}
		_ = json.Unmarshal(c.Args(), &p)
		return &agent.Result{Value: p.V}, nil
	}))
	return reg
}

func runLoop(t *testing.T, cfg agent.Config, msgs []message.Message, answers ...string) (*agent.RunResult, []provider.Request) {
	t.Helper()
	p := scripted.Solutions(answers...)
	cfg.Provider = p
	if cfg.Clock == nil {
		cfg.Clock = fixed
	}
	res, err := agent.Run(context.Background(), cfg, anyOut, msgs)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, p.Requests()
}

// TestPrefixStateWrites: writes by every output method.
func TestPrefixStateWrites(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},
		{"type":"data","kind":"state","data":{"list":[],"obj":{"a":1}}},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.n"},{"_tool":"put","v":2,"_outputPath":"†state.list","_outputMethod":"push"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"b":{"c":1}},"_outputPath":"†state.obj","_outputMethod":"merge"},{"_tool":"put","v":[3,4],"_outputPath":"†state.list","_outputMethod":"concat"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"z":0},"_outputPath":"†state.obj","_outputMethod":"assign"},{"_tool":"put","v":5,"_outputPath":"†state.x && †notes.x"},{"_tool":"put","v":6,"_outputPath":"†state.ok || †state.err"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"all":"new"},"_outputPath":"†state"},{"_tool":"put","v":7,"_outputPath":"†notes.y"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
}

// TestPrefixPlanBlockedAndRefs: a call blocked on a reference, released
// within its step, a fallback, and a call never ready.
func TestPrefixPlanBlockedAndRefs(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},
		{"type":"data","kind":"input","data":{"x":1}},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: echoReg()}, msgs,
		// b reads what a writes later in the step; c waits forever; d falls back
		`{"calls":[{"_tool":"put","v":"†state.a","_outputPath":"†state.b"},{"_tool":"put","v":"†input.x","_outputPath":"†state.a"},
			{"_tool":"put","v":"†state.never","_outputPath":"†state.c"},{"_tool":"put","v":"†state.nope || †input.x","_outputPath":"†state.d"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":"†state.b","_outputPath":"†state.e"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
}

// TestPrefixCallErrorsAndRetries: failing calls of every kind, and a
// provider retried after errors.
func TestPrefixCallErrorsAndRetries(t *testing.T) {
	reg := echoReg()
	reg.Tool("flaky", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	reg.Activity("flaky", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("service unavailable")
	}))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"flaky"},{"type":"text","text":"go"}]`)
	// The provider fails twice with a retryable error before each answer.
	inner := scripted.Solutions(
		`{"calls":[{"_tool":"flaky","n":1,"_outputPath":"†state.f"},{"_tool":"nope"},{"_tool":"flaky","n":"x"},{"_tool":"put","v":1,"_outputPath":"†state.ok || †state.err"}],"output":null}`,
		`{"calls":[{"_tool":"flaky","n":2,"_outputPath":"†state.ok || †state.err"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	var n atomic.Int32
	flaky := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if n.Add(1)%2 == 1 {
			return func(yield func(*provider.Chunk, error) bool) {
				yield(nil, &provider.Error{Provider: "x", Status: 503, Err: errors.New("overloaded")})
			}
		}
		return inner.Generate(ctx, req)
	})
	cfg := agent.Config{Registry: reg, Concurrency: 1, Clock: fixed,
		Provider: provider.Retry(flaky, provider.RetryConfig{Attempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }})}
	if _, err := agent.Run(context.Background(), cfg, anyOut, msgs); err != nil {
		t.Fatal(err)
	}
	checkExtends(t, inner.Requests())
}

// TestPrefixInvalidAnswers: answers the schema refuses, in the loop and
// repaired in a Request.
func TestPrefixInvalidAnswers(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: echoReg(), MaxRepairs: 3}, msgs,
		`not json at all`,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":{"done":"yes"}}`,
		`{"calls":[{"_tool":"put","v":2,"_outputPath":"†state.b"}]}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
	// A single Request repairs by extending the request.
	p := scripted.Solutions(`{"output":{"done":"no"}}`, `{"output":1}`, `{"output":{"done":true}}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: echoReg(), MaxRepairs: 3}, anyOut, msgs[:1]); err != nil {
		t.Fatal(err)
	}
	checkExtends(t, p.Requests())
}

// TestPrefixLatentTool: a tool with no activity, answered inline and by
// a request of its own (which has its own context).
func TestPrefixLatentTool(t *testing.T) {
	reg := echoReg()
	reg.Tool("guess", json.RawMessage(`{"type":"object","description":"Guesses a number.","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}`))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"guess"},{"type":"data","kind":"state","data":{"k":1}},{"type":"text","text":"go"}]`)
	res, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"guess","q":"a","_output":7,"_outputPath":"†state.g"},{"_tool":"guess","q":"b","_outputPath":"†state.h"}],"output":null}`,
		`{"output":3}`, // the latent call's own request
		`{"calls":[{"_tool":"guess","q":"c","_scopes":["state"],"_outputPath":"†state.i"}],"output":null}`,
		`{"output":4}`,
		`{"calls":[],"output":{"done":true}}`)
	checkLoopExtends(t, reqs, 3)
	if errs := planErrors(res.Log); len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
}

// TestPrefixLatentRepaired: a latent call whose answer misses its
// _output is re-asked in its own small request (Config.MaxRepairs, 2 by
// default), as a Request and ExecutePlan do. Before, the loop's "never
// repair the step's solution" leaked into its latent calls: the call
// failed, its error stayed in every later request of the run, and the
// model spent a whole step of the loop's context to make it again.
func TestPrefixLatentRepaired(t *testing.T) {
	reg := echoReg()
	reg.Tool("guess", json.RawMessage(`{"type":"object","description":"Guesses a number.","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}`))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"guess"},{"type":"text","text":"go"}]`)
	res, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"guess","q":"b","_outputPath":"†state.h"}],"output":null}`,
		`{"output":"three"}`, // the latent call's own request
		`{"output":3}`,       // its repair
		`{"calls":[],"output":{"done":true}}`)
	if errs := planErrors(res.Log); len(errs) > 0 {
		t.Errorf("errors: %q", errs)
	}
	if got, err := ref.EvalString(res.Log, "†state.h"); err != nil || string(got) != "3" {
		t.Errorf("†state.h = %s, %v; want 3", got, err)
	}
	checkLoopExtends(t, reqs, 2)
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	checkExtends(t, reqs[1:3]) // the repair extends the latent call's request
}

// TestPrefixDelegate: a delegate's sub-run has its own context; the
// loop's requests extend.
func TestPrefixDelegate(t *testing.T) {
	reg := echoReg()
	reg.Tool("stylist", json.RawMessage(`{"type":"object","description":"You are a stylist.","properties":{"forecast":{"type":"object"},"_output":{"type":"string"}},"required":["forecast"],"_delegate":"anonymous"}`))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"stylist"},{"type":"data","kind":"state","data":{"sky":"rain"}},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"stylist","forecast":"†state","_scopes":["state"],"_outputPath":"†state.outfit"}],"output":null}`,
		`{"output":"raincoat"}`,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkLoopExtends(t, reqs, 3)
}

// TestPrefixScopes: calls with _scopes.
func TestPrefixScopes(t *testing.T) {
	reg := echoReg()
	reg.Tool("peek", json.RawMessage(`{"type":"object","properties":{"_scopes":{"const":["state"]}}}`))
	reg.Activity("peek", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(fmt.Sprint(len(c.Context())))}, nil
	}))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"peek"},
		{"type":"data","kind":"state","data":{"a":1}},{"type":"data","kind":"state","_instance":"i1","data":{"a":2}},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"peek","_outputPath":"†state.seen"},{"_tool":"put","v":"†state.a","_scopes":["†state.a"],"_instance":"i1","_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":"†state.b","_scopes":["state"],"_outputPath":"†state.c"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
}

// toolsRun runs a loop with a meta message whose unlock tool offers the
// tool its call names, by a tool message the activity appends.
func toolsRun(t *testing.T, unlock ...string) []provider.Request {
	reg := echoReg()
	reg.Tool("extra", json.RawMessage(`{"type":"object","properties":{"y":{"type":"integer"}}}`))
	reg.Tool("unlock", json.RawMessage(`{"type":"object","properties":{"which":{"type":"string"}},"required":["which"]}`))
	reg.Activity("unlock", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct{ Which string }
		_ = json.Unmarshal(c.Args(), &p)
		return &agent.Result{Messages: []message.Message{message.Tool(p.Which)}}, nil
	}))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"meta","meta":{"path":"/x","version":"1.0.0"}},
		{"type":"tool","tool":"put"},{"type":"tool","tool":"unlock"},{"type":"text","text":"go"}]`)
	var answers []string
	for _, u := range unlock {
		answers = append(answers, `{"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"unlock","which":"`+u+`"}],"output":null}`)
	}
	answers = append(answers, `{"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{"meta":{"path":"/x","version":"1.0.1"},"calls":[],"output":{"done":true}}`)
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs, answers...)
	return reqs
}

// TestPrefixToolAddedMidRun: a meta message, and a tool offered as the
// run goes. The schema changes once, when the tool is added (the offered
// tools changed); the messages always extend.
func TestPrefixToolAddedMidRun(t *testing.T) {
	reqs := toolsRun(t, "extra")
	for _, b := range prefixBreaks(reqs) {
		if !strings.HasPrefix(b, "request 2: composed schema changed") {
			t.Error(b)
		}
	}
}

// advisorRun runs three steps with an advisor of the given on.
func advisorRun(t *testing.T, on string) []provider.Request {
	reg := echoReg()
	adv := fmt.Sprintf(`{"type":"advisor","id":"risk","role":"Weigh the risks.","on":%q}`, on)
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},`+adv+`,{"type":"text","text":"go"}]`)
	ops := `"advisors":[{"id":"risk","calls":"{\"put\":1}"}],`
	answer := func(active bool, body string) string {
		if active {
			return `{` + ops + body[1:]
		}
		return body
	}
	step := `{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`
	done := `{"calls":[],"output":{"done":true}}`
	var answers []string
	switch on {
	case "request":
		answers = []string{answer(true, step), answer(true, step), answer(true, done)}
	case "start":
		answers = []string{answer(true, step), step, done}
	case "finish":
		answers = []string{step, answer(true, step), answer(true, done)}
	default:
		answers = []string{step, step, done}
	}
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs, answers...)
	return reqs
}

// TestPrefixAdvisors: an advisor's text says when it speaks, not whether
// it speaks now, so it reads the same at every step, whatever its on:
// each request extends the one before and marks its messages stable as
// any loop's. The schema changes only where a start advisor falls silent
// or a finish advisor speaks, at the second request.
func TestPrefixAdvisors(t *testing.T) {
	for _, on := range []string{"request", "", "start", "finish"} {
		t.Run("on="+on, func(t *testing.T) {
			reqs := advisorRun(t, on)
			for i, r := range reqs {
				active := strings.Contains(string(r.Schema), `"advisors"`)
				if want := on == "request" || on == "start" && i == 0 || on == "finish" && i > 0; active != want {
					t.Errorf("request %d: advisors in the schema %v, want %v", i+1, active, want)
				}
				if i == 0 {
					continue
				}
				prev := reqs[i-1]
				if changed := string(prev.Schema) != string(r.Schema); changed != (i == 1 && (on == "start" || on == "finish")) {
					t.Errorf("request %d: schema changed %v", i+1, changed)
				}
				bare := []provider.Request{prev, r}
				for k := range bare {
					bare[k].Schema, bare[k].CacheKey = nil, "" // the key follows the schema
				}
				for _, b := range prefixBreaks(bare) {
					t.Error(b)
				}
				if !r.Messages[len(prev.Messages)-1].Stable || !r.Messages[len(r.Messages)-1].Stable {
					t.Errorf("request %d marks no breakpoint where request %d ended, or at its end", i+1, i)
				}
			}
		})
	}
}

// TestPrefixConfirm: a Confirm hook that rejects a call and replaces one.
func TestPrefixConfirm(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	confirm := func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
		switch {
		case strings.Contains(string(c.Args()), `2`):
			return agent.Decision{Reject: "no twos"}, nil
		case strings.Contains(string(c.Args()), `3`):
			return agent.Decision{Replace: json.RawMessage(`{"_tool":"put","v":33,"_outputPath":"†state.c"}`)}, nil
		}
		return agent.Decision{}, nil
	}
	_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1, Confirm: confirm}, msgs,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":3,"_outputPath":"†state.x"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
}

// TestPrefixHandlerMessages: activities that append data messages of
// their own, in the background too, and a handler of the user's.
func TestPrefixHandlerMessages(t *testing.T) {
	reg := echoReg()
	reg.Tool("note", json.RawMessage(`{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}`))
	reg.Activity("note", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{
			message.Data("notes", json.RawMessage(`{"`+c.ID+`":true}`)),
			{Type: message.TypeData, Kind: "state", Data: json.RawMessage(`{"last":"` + c.ID + `"}`), Description: "What was done."},
			{Type: "memo", Text: "memo " + c.ID},
		}}, nil
	}))
	reg.HandleFunc("memo", func(ctx context.Context, b *agent.Build, m *message.Message) error {
		b.Render(provider.RoleUser, "## Memo\n"+m.Text)
		return nil
	})
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"note"},{"type":"text","text":"go"}]`)
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"note","k":"a","_outputPath":"†state.n"},{"_tool":"note","k":"bg"}],"output":null}`,
		`{"calls":[{"_tool":"note","k":"b","_outputPath":"†state.n"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, reqs)
}

// TestPrefixEventsEqualsRunAndN: Run and Events send the same requests,
// and N > 1 changes nothing in the loop.
func TestPrefixEventsEqualsRunAndN(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"data","kind":"state","data":{"l":[]}},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":2,"_outputPath":"†state.l","_outputMethod":"push"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":3,"_outputPath":"†state.l","_outputMethod":"push"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	_, viaRun := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1, N: 2}, msgs, answers...)
	checkExtends(t, viaRun)
	p := scripted.Solutions(answers...)
	for _, err := range agent.Events(context.Background(), agent.Config{Provider: p, Registry: echoReg(), Concurrency: 1, Clock: fixed, N: 2}, anyOut, msgs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	viaEvents := p.Requests()
	checkExtends(t, viaEvents)
	for i := range viaRun {
		if sentBytes(viaRun[i]) != sentBytes(viaEvents[i]) {
			t.Errorf("request %d differs between Run and Events", i+1)
		}
	}
}

// cutRun runs a durable loop whose provider cancels the run while the
// model answers request cutAt (from 1), then resumes it: it returns the
// requests before the cut (the cut one included) and after the resume.
func cutRun(t *testing.T, reg *agent.Registry, msgs []message.Message, conc, cutAt int, answers ...string) (before, after []provider.Request) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := scripted.Solutions(answers...)
	var cutReq []provider.Request
	cut := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if len(first.Requests()) == cutAt-1 {
			cutReq = append(cutReq, *req)
			cancel()
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, c.Err()) }
		}
		return first.Generate(c, req)
	})
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Concurrency: conc, Clock: fixed, Store: st, RunID: "r", Provider: cut}
	if _, err := agent.Run(ctx, cfg, anyOut, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	rest := scripted.Solutions(answers[cutAt-1:]...)
	cfg.Provider, cfg.RunID = rest, ""
	if _, err := agent.Resume(context.Background(), cfg, "r"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	return append(first.Requests(), cutReq...), rest.Requests()
}

// TestPrefixResumeExtends resumes a durable run cut while the model
// answers its third request: the requests after the resume extend the
// last one sent before the cut. The values hold nothing unusual.
func TestPrefixResumeExtends(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"data","kind":"input","data":{"q":"plain"}},{"type":"text","text":"go"}]`)
	before, after := cutRun(t, echoReg(), msgs, 4, 3,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":"†state.a","_outputPath":"†state.c"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":3,"_outputPath":"†state.d"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, append(before, after...))
}

// TestPrefixResumeHTMLCharacters is TestPrefixResumeExtends with "<", ">"
// and "&" in the input, a tool's description and the model's calls: the
// journal stores messages with json.Marshal, which escapes them as
// \u003c, \u003e, \u0026, so a resumed run renders the input, the tool
// and every plan differently from the requests the model saw.
func TestPrefixResumeHTMLCharacters(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("search", json.RawMessage(`{"type":"object","description":"Searches the R&D wiki; returns <title, url> pairs where score > 0.5.","properties":{"q":{"type":"string"}},"required":["q"]}`))
	reg.Activity("search", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`["hit"]`)}, nil
	}))
	offer, err := reg.Offer()
	if err != nil {
		t.Fatal(err)
	}
	in, err := message.Input(map[string]string{"question": "Is <b> bold & x > 1?"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []message.Message{message.System("sys"), offer, in, message.Text("go")}
	before, after := cutRun(t, reg, msgs, 1, 3,
		`{"calls":[{"_tool":"search","q":"Tom & Jerry <cast>","_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[{"_tool":"search","q":"a > b","_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkExtends(t, append(before, after...))
}

// TestPrefixResumeMidStep cuts a durable run while a call of its second
// step runs (another call of the step finished already), and resumes it:
// the call runs again (it is idempotent), the step ends, and the requests
// after the resume extend the last one sent before the cut.
func TestPrefixResumeMidStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cutNow atomic.Bool
	cutNow.Store(true)
	reg := echoReg()
	reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
		if cutNow.Swap(false) {
			time.Sleep(20 * time.Millisecond) // let the fast call of the step settle
			cancel()
			<-c.Done()
			return nil, c.Err()
		}
		return &agent.Result{Value: json.RawMessage(`"slow done"`)}, nil
	})))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[{"_tool":"slow","v":2,"_outputPath":"†state.s"},{"_tool":"put","v":3,"_outputPath":"†state.b"},{"_tool":"put","v":"†state.zz","_outputPath":"†state.never"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	first := scripted.Solutions(answers[:2]...)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Concurrency: 4, Clock: fixed, Store: st, RunID: "m", Provider: first}
	if _, err := agent.Run(ctx, cfg, anyOut, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	rest := scripted.Solutions(answers[2:]...)
	cfg.Provider, cfg.RunID = rest, ""
	if _, err := agent.Resume(context.Background(), cfg, "m"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	reqs := append(first.Requests(), rest.Requests()...)
	checkExtends(t, reqs)
	if len(reqs) != 3 || !strings.Contains(fmt.Sprint(reqs[2].Messages), "slow done") {
		t.Errorf("%d requests; the last:\n%v", len(reqs), reqs[len(reqs)-1].Messages)
	}
}

// TestPrefixToolOfferedAgain: a tool message offers put again, with the
// definition it has. The offered tools did not change, and neither does
// the composed schema (put keeps its place).
func TestPrefixToolOfferedAgain(t *testing.T) {
	checkExtends(t, toolsRun(t, "put"))
}

// instancesReg is echoReg with the tool load (see addLoad).
func instancesReg() *agent.Registry {
	reg := echoReg()
	addLoad(reg)
	return reg
}

// addLoad adds to reg the tool load, which brings a work item as
// instanced input: the instance it names appears as the run goes.
func addLoad(reg *agent.Registry) {
	reg.Tool("load", json.RawMessage(`{"type":"object","description":"Loads a work item as an instance.","properties":{"id":{"type":"string"}},"required":["id"]}`))
	reg.Activity("load", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct{ ID string }
		_ = json.Unmarshal(c.Args(), &p)
		m := message.Data(message.KindInput, json.RawMessage(`{"item":"`+p.ID+`"}`))
		m.Instance = p.ID
		return &agent.Result{Messages: []message.Message{m}}, nil
	}))
}

// instancesAnswers load instance b at step 2 and d at step 3, where a
// call also names an instance the data does not have.
var instancesAnswers = []string{
	`{"calls":[{"_tool":"put","_instance":"a","v":1,"_outputPath":"†state.n"}],"output":null}`,
	`{"calls":[{"_tool":"load","id":"b","_outputPath":"†state.loaded"}],"output":null}`,
	`{"calls":[{"_tool":"load","id":"d","_outputPath":"†state.loaded"},{"_tool":"put","_instance":"zz","v":3,"_outputPath":"†state.n"}],"output":null}`,
	`{"calls":[{"_tool":"put","_instance":"d","v":4,"_outputPath":"†state.n"}],"output":null}`,
	`{"calls":[],"output":{"done":true}}`}

const instancesContext = `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"load"},
	{"type":"data","kind":"input","_instance":"a","data":{"item":"a"}},{"type":"text","text":"go"}]`

// checkInstancesOpen checks that the only break in reqs is the composed
// schema of request 3, the first after an instance appeared mid-run,
// where _instance turned from the enum of the context's instances into
// any string: later instances change nothing the model has seen.
func checkInstancesOpen(t *testing.T, reqs []provider.Request) {
	t.Helper()
	breaks := prefixBreaks(reqs)
	if len(breaks) != 1 || !strings.HasPrefix(breaks[0], "request 3: composed schema changed") {
		t.Fatalf("breaks: %q", breaks)
	}
	if s := string(reqs[0].Schema); !strings.Contains(s, `"_instance":{"enum":["a"]`) {
		t.Errorf("the first request's _instance is not the enum of the context's instances: %s", s)
	}
	if s := string(reqs[2].Schema); !strings.Contains(s, `"_instance":{"type":"string"`) {
		t.Errorf("request 3's _instance is not a string: %s", s)
	}
}

// TestPrefixInstancingNewInstance: instances that appear mid-run cost
// one change of the composed schema in all, not one per instance, and a
// call naming an instance the data lacks is an error of its own.
func TestPrefixInstancingNewInstance(t *testing.T) {
	res, reqs := runLoop(t, agent.Config{Registry: instancesReg(), Concurrency: 1}, ctxOf(t, instancesContext), instancesAnswers...)
	checkInstancesOpen(t, reqs)
	if errs := planErrors(res.Log); len(errs) != 1 || !strings.Contains(errs[0], `_instance "zz" names no instance of the data (a, b, d)`) {
		t.Errorf("errors %q", errs)
	}
	if got, err := ref.EvalString(res.Log.Instance("d"), "†state.n"); err != nil || string(got) != "4" {
		t.Errorf("instance d's n: %s, %v", got, err)
	}
}

// TestPrefixInstancingResumed: a resumed run knows which instances came
// with its context, so its requests go on as the uninterrupted run's.
func TestPrefixInstancingResumed(t *testing.T) {
	before, after := cutRun(t, instancesReg(), ctxOf(t, instancesContext), 1, 4, instancesAnswers...)
	checkInstancesOpen(t, append(before, after...))
}

// resumeReg is instancesReg with a latent tool and unlock, whose activity
// offers a tool, bumps the meta and adds an advisor as the run goes.
func resumeReg() *agent.Registry {
	reg := instancesReg()
	reg.Tool("extra", json.RawMessage(`{"type":"object","properties":{"y":{"type":"integer"}}}`))
	reg.Activity("extra", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) { return &agent.Result{}, nil }))
	reg.Tool("guess", json.RawMessage(`{"type":"object","description":"Guesses.","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}`))
	reg.Tool("unlock", json.RawMessage(`{"type":"object","properties":{"which":{"type":"string"}},"required":["which"]}`))
	reg.Activity("unlock", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct{ Which string }
		_ = json.Unmarshal(c.Args(), &p)
		return &agent.Result{Messages: []message.Message{message.Tool(p.Which), {Type: message.TypeMeta, Meta: json.RawMessage(`{"path":"/x","version":"1.0.1"}`)},
			{Type: message.TypeAdvisor, Advisor: &message.Advisor{ID: "late", Role: "Late.", On: "request"}}}}, nil
	}))
	return reg
}

const resumeContext = `[{"type":"text","role":"system","text":"sys"},{"type":"meta","meta":{"path":"/x","version":"1.0.0"}},
	{"type":"tool","tool":"put"},{"type":"tool","tool":"load"},{"type":"tool","tool":"guess"},{"type":"tool","tool":"unlock"},
	{"type":"advisor","id":"fin","role":"Fin.","on":"finish"},{"type":"advisor","id":"sec","role":"Sec."},
	{"type":"data","kind":"input","_instance":"a","data":{"item":"a"}},{"type":"text","text":"go"}]`

// resumeAnswers: a latent call answered by its own request (the second),
// then a new instance, a tool, a meta and an advisor that come mid-run,
// and a call never ready.
var resumeAnswers = []string{
	`{"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"put","_instance":"a","v":1,"_outputPath":"†state.n"},{"_tool":"guess","q":"x","_outputPath":"†state.g"}],"output":null}`,
	`{"output":5}`,
	`{"advisors":[{"id":"fin","calls":"{}"}],"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"load","id":"b","_outputPath":"†state.loaded"},{"_tool":"unlock","which":"extra"}],"output":null}`,
	`{"advisors":[{"id":"late","calls":"{}"},{"id":"fin","calls":"{}"}],"meta":{"path":"/x","version":"1.0.2"},"calls":[{"_tool":"extra","y":1},{"_tool":"put","v":"†state.nope","_outputPath":"†state.z"}],"output":null}`,
	`{"advisors":[{"id":"late","calls":"{}"},{"id":"fin","calls":"{}"}],"meta":{"path":"/x","version":"1.0.2"},"calls":[{"_tool":"put","_instance":"b","v":4,"_outputPath":"†state.n"}],"output":null}`,
	`{"advisors":[{"id":"late","calls":"{}"},{"id":"fin","calls":"{}"}],"meta":{"path":"/x","version":"1.0.2"},"calls":[],"output":{"done":true}}`}

// breakpoints returns the indexes of the last two Stable messages of r
// (-1 for none): where the Anthropic adapter puts its cache breakpoints.
func breakpoints(r provider.Request) [2]int {
	out := [2]int{-1, -1}
	for i, m := range r.Messages {
		if m.Stable {
			out[0], out[1] = out[1], i
		}
	}
	return out
}

// TestPrefixResumeEverywhere cuts a durable run while the model answers
// each of its loop requests in turn, and resumes it: the requests are
// those of the run uninterrupted, byte for byte, with the same last two
// breakpoints. The resumed request that is the cut one again marked only
// its end: where the step before ended, which the provider's cache may
// hold when the cut request never reached it, was lost.
func TestPrefixResumeEverywhere(t *testing.T) {
	_, full := runLoop(t, agent.Config{Registry: resumeReg(), Concurrency: 1}, ctxOf(t, resumeContext), resumeAnswers...)
	if len(full) != len(resumeAnswers) {
		t.Fatalf("%d requests, want %d", len(full), len(resumeAnswers))
	}
	for cut := 3; cut <= len(resumeAnswers); cut++ { // request 2 is the latent call's
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			before, after := cutRun(t, resumeReg(), ctxOf(t, resumeContext), 1, cut, resumeAnswers...)
			reqs := append(before[:len(before)-1], after...) // the cut request is sent again
			if len(reqs) != len(full) {
				t.Fatalf("%d requests, want %d", len(reqs), len(full))
			}
			for i := range reqs {
				if got, want := sentBytes(reqs[i]), sentBytes(full[i]); got != want {
					t.Errorf("request %d: %s", i+1, firstDiff(want, got))
				}
				if got, want := breakpoints(reqs[i]), breakpoints(full[i]); got != want {
					t.Errorf("request %d: breakpoints at messages %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// TestPrefixNextTurn: a conversation's next turn is a run whose context
// is the log of the turn before, the answer and the user's next message:
// its requests extend the last request of the turn before, whose
// _instance was opened by instances that came mid-run.
func TestPrefixNextTurn(t *testing.T) {
	cfg := agent.Config{Registry: instancesReg(), Concurrency: 1}
	res, first := runLoop(t, cfg, ctxOf(t, instancesContext), instancesAnswers...)
	next := append(res.Log.Messages(), message.Assistant(`{"done":true}`), message.Text("again"))
	_, second := runLoop(t, cfg, next, `{"calls":[{"_tool":"load","id":"e","_outputPath":"†state.loaded"}],"output":null}`, `{"calls":[],"output":{"done":true}}`)
	for _, b := range prefixBreaks([]provider.Request{first[len(first)-1], second[0], second[1]}) {
		t.Error(b)
	}
}

// notesContext is a context of n instanced orders: with described, as
// a program that builds its messages one by one may write them, each
// with the same description and schema; without, the first n orders of
// examples/orders, as acts run --input gives them.
func notesContext(t *testing.T, n int, described bool) []message.Message {
	lines, err := os.ReadFile("examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	orders := strings.SplitN(string(lines), "\n", n+1)[:n]
	var b strings.Builder
	b.WriteString(`[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"}`)
	for i, o := range orders {
		if described {
			fmt.Fprintf(&b, `,{"type":"data","kind":"input","_instance":"order-%04d","data":{"sku":"s%d","qty":%d},"description":"An order to check.","schema":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}`, i+1, i, i+1)
			continue
		}
		// {"_instance":"order-0001",...} → a data message of that instance
		inst, data, _ := strings.Cut(strings.TrimPrefix(o, `{"_instance":`), ",")
		fmt.Fprintf(&b, `,{"type":"data","kind":"input","_instance":%s,"data":{%s}`, inst, data)
	}
	b.WriteString(`,{"type":"text","text":"Check the orders."}]`)
	return ctxOf(t, b.String())
}

// notesAnswers write to the state of two instances, then end.
var notesAnswers = []string{
	`{"calls":[{"_tool":"put","_instance":"order-0001","v":1,"_outputPath":"†state.ok"},{"_tool":"put","_instance":"order-0002","v":1,"_outputPath":"†state.ok"}],"output":null}`,
	`{"calls":[{"_tool":"put","_instance":"order-0003","v":0,"_outputPath":"†state.ok"}],"output":null}`,
	`{"calls":[],"output":{"done":true}}`}

// TestPrefixDataNotesOnce: the notes a data block makes (how an instance
// combines with the global data, that input is a structured prompt) are
// said once a request, and a description or schema once while it stays
// the same for its kind; every block used to say them all, in every
// request. The requests still extend each other, a compaction says them
// again in its snapshot (the blocks before are gone), and a resumed run sends what the run would
// have sent.
func TestPrefixDataNotesOnce(t *testing.T) {
	count := func(r provider.Request, s string) int { return strings.Count(sentBytes(r), s) }
	notes := []string{"the global ¶input field by field", "the global ¶state field by field", "MUST be treated as a structured prompt", "An order to check.", "Schema for ¶input"}
	for _, described := range []bool{false, true} {
		t.Run(fmt.Sprint("described=", described), func(t *testing.T) {
			_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, notesContext(t, 20, described), notesAnswers...)
			checkExtends(t, reqs)
			last := reqs[len(reqs)-1]
			said := notes
			if !described {
				said = notes[:3] // the orders have no description or schema
			}
			for _, s := range said {
				if n := count(last, s); n != 1 {
					t.Errorf("the last request says %q %d times, want once", s, n)
				}
			}
			_, total, _, _ := cacheFigures(reqs)
			t.Logf("%d requests: the first %d bytes, the last %d; %d in all", len(reqs), len(sentBytes(reqs[0])), len(sentBytes(last)), total)
		})
	}
	t.Run("compaction", func(t *testing.T) {
		_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1, CompactAt: 300}, notesContext(t, 20, true), notesAnswers...)
		last := reqs[len(reqs)-1]
		if count(last, "## Compacted") != 1 {
			t.Fatalf("the last request has %d compactions, want 1", count(last, "## Compacted"))
		}
		for _, s := range notes {
			if n := count(last, s); n != 1 {
				t.Errorf("the last request says %q %d times, want once", s, n)
			}
		}
	})
	t.Run("resume", func(t *testing.T) {
		_, full := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, notesContext(t, 20, true), notesAnswers...)
		before, after := cutRun(t, echoReg(), notesContext(t, 20, true), 1, 3, notesAnswers...)
		reqs := append(before[:len(before)-1], after...)
		if len(reqs) != len(full) {
			t.Fatalf("%d requests, want %d", len(reqs), len(full))
		}
		for i := range reqs {
			if got, want := sentBytes(reqs[i]), sentBytes(full[i]); got != want {
				t.Errorf("request %d: %s", i+1, firstDiff(want, got))
			}
		}
	})
}

// TestPrefixErrorNamesCall: an error of a call of the plan just shown
// names it by its place there, where it wrote the call out again: a call
// with a long parameter was in every later request twice. A call the
// plan holds twice, or that is not in it, is still written out.
func TestPrefixErrorNamesCall(t *testing.T) {
	reg := echoReg()
	reg.Tool("send", json.RawMessage(`{"type":"object","description":"Sends a report.","properties":{"text":{"type":"string"}},"required":["text"]}`))
	reg.Activity("send", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("mail server unavailable")
	}))
	report := strings.Repeat("Renewals rose in the quarter; churn fell. ", 12)
	send := `{"_reasoningForCall":"Send the report now that it is written.","_tool":"send","text":"` + report + `","_outputPath":"†state.sent"}`
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"send"},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},` + send + `],"output":null}`,
		`{"calls":[{"_tool":"put","v":2,"_outputPath":"†state.b"},{"_tool":"send","text":"hi"},{"_tool":"send","text":"hi"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs, answers...)
	checkExtends(t, reqs)
	last := sentBytes(reqs[len(reqs)-1])
	if n := strings.Count(last, report); n != 1 {
		t.Errorf("the last request holds the report %d times, want once (in the plan)", n)
	}
	if !strings.Contains(last, "## Error\nCall 2 of the plan above (send) failed: runtime error: mail server unavailable") {
		t.Errorf("the send call's error does not name it by its place:\n%s", last)
	}
	if n := strings.Count(last, `The call {"_tool":"send","text":"hi"} failed`); n != 2 {
		t.Errorf("the calls the plan holds twice are written out in %d errors, want 2:\n%s", n, last)
	}
	_, total, _, _ := cacheFigures(reqs)
	t.Logf("%d requests: the last %d bytes; %d in all", len(reqs), len(last), total)

	// A resumed run and a compacted one name the call as the run did.
	_, compacted := runLoop(t, agent.Config{Registry: reg, Concurrency: 1, CompactAt: 200}, msgs, answers...)
	if c := sentBytes(compacted[len(compacted)-1]); !strings.Contains(c, "## Compacted") || strings.Count(c, report) != 1 {
		t.Errorf("compacted: the last request holds the report %d times, want once:\n%s", strings.Count(c, report), c)
	}
	before, after := cutRun(t, reg, msgs, 1, 3, answers...)
	if got := sentBytes(after[len(after)-1]); got != sentBytes(reqs[len(reqs)-1]) {
		t.Errorf("resumed: %s", firstDiff(sentBytes(reqs[len(reqs)-1]), got))
	}
	checkExtends(t, append(before, after...))
}

// TestPrefixIdeaSaved saves a finished run as an Idea file
// (RunResult.Idea, Idea.Marshal) and reads it back (ParseIdea): the next
// turn from the file's context sends the requests a next turn from the
// run's log sends, `<`, `>` and `&` in the model's calls included, so the
// prompt cache reads the run's requests.
func TestPrefixIdeaSaved(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	res, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"put","v":"Tom & Jerry <cast>","_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	b, err := res.Idea(anyOut).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	idea, err := agent.ParseIdea(b)
	if err != nil {
		t.Fatal(err)
	}
	_, fromFile := runLoop(t, agent.Config{Registry: echoReg()}, append(idea.Context, message.Text("again")), `{"calls":[],"output":{"done":true}}`)
	_, fromLog := runLoop(t, agent.Config{Registry: echoReg()}, append(res.Log.Messages(), message.Text("again")), `{"calls":[],"output":{"done":true}}`)
	checkExtends(t, []provider.Request{reqs[len(reqs)-1], fromLog[0]})
	checkExtends(t, []provider.Request{reqs[len(reqs)-1], fromFile[0]})
}

// TestPrefixLatentOutputOnce: a latent call whose _output the model wrote
// in the call itself (eager, 104) is written where its _outputPath says,
// and that data block shows the value: the plan after it leaves the
// _output out, which would say the value a second time in every later
// request. A call with no _outputPath keeps it, as nothing else shows it.
func TestPrefixLatentOutputOnce(t *testing.T) {
	reg := echoReg()
	reg.Tool("summarize", json.RawMessage(`{"type":"object","description":"Summarizes a text.","properties":{"text":{"type":"string"},"_output":{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}},"required":["text"]}`))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"summarize"},{"type":"text","text":"go"}]`)
	kept := strings.Repeat("kept ", 20)
	long := strings.Repeat("a long summary ", 30)
	res, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"summarize","text":"t1","_output":{"summary":"`+long+`"},"_outputPath":"†state.s"},`+
			`{"_tool":"summarize","text":"t2","_output":{"summary":"`+kept+`"}}],"output":null}`,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.p"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkLoopExtends(t, reqs, 3)
	if got := lookup(t, res.Log, "†state.s.summary"); got != strconv.Quote(long) {
		t.Errorf("†state.s.summary = %s", got)
	}
	for i, r := range reqs[1:] {
		var all strings.Builder
		for _, m := range r.Messages {
			all.WriteString(m.Text)
		}
		if n := strings.Count(all.String(), long); n != 1 {
			t.Errorf("request %d says the summary written to †state.s %d times, want once:\n%s", i+2, n, all.String())
		}
		if n := strings.Count(all.String(), kept); n != 1 {
			t.Errorf("request %d says the summary of the call with no _outputPath %d times, want once", i+2, n)
		}
		if !strings.Contains(all.String(), `{"_tool":"summarize","text":"t1","_outputPath":"†state.s"}`) {
			t.Errorf("request %d does not show the call as written, less its _output:\n%s", i+2, all.String())
		}
	}
	t.Logf("requests 2 and 3: %d and %d bytes of messages", len(sentBytes(reqs[1]))-len(reqs[1].Schema), len(sentBytes(reqs[2]))-len(reqs[2].Schema))
}

// TestPrefixAdvisorNotesOnce: what applies to every advisor that speaks
// in the solution (how to give votes) and to every on-demand one (the
// tool that consults it) is said once a request, with the first advisor
// it applies to; each advisor's own text still says when it speaks. What
// an advisor's block says depends only on the blocks before it, so each
// request extends the one before.
func TestPrefixAdvisorNotesOnce(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},
		{"type":"advisor","id":"risk","role":"Weigh the risks.","on":"request"},
		{"type":"advisor","id":"cost","role":"Weigh the cost.","on":"request"},
		{"type":"advisor","id":"causes","role":"Trace the causes.","on":"finish"},
		{"type":"advisor","id":"security","role":"Review security."},
		{"type":"advisor","id":"legal","role":"Review the terms."},
		{"type":"text","text":"go"}]`)
	ops := `"advisors":[{"id":"risk","calls":"{}"},{"id":"cost","calls":"{}"}],`
	_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, msgs,
		`{`+ops+`"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{`+ops[:len(ops)-2]+`,{"id":"causes","calls":"{}"}],"calls":[],"output":{"done":true}}`)
	bare := slices.Clone(reqs)
	for k := range bare {
		bare[k].Schema, bare[k].CacheKey = nil, "" // the finish advisor joins the schema at the second step
	}
	checkExtends(t, bare)
	var all strings.Builder
	for _, m := range reqs[1].Messages {
		all.WriteString(m.Text + "\n")
	}
	for _, s := range []string{`put its votes for tools in calls as inline JSON`, `with the ConsultAdvisor tool`} {
		if n := strings.Count(all.String(), s); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", s, n, all.String())
		}
	}
	for _, s := range []string{"## Advisor: cost\nWeigh the cost.\nGive its opinion in advisors at every step, before any call.",
		"## Advisor: causes\nTrace the causes.\nGive its opinion in advisors at every step after the first, as you decide whether to stop, before any call.",
		"## Advisor: legal\nReview the terms.\nConsult it on demand."} {
		if !strings.Contains(all.String(), s) {
			t.Errorf("no %q in:\n%s", s, all.String())
		}
	}
	t.Logf("request 2: %d bytes of messages", len(sentBytes(reqs[1]))-len(reqs[1].Schema))
}

// TestPrefixErrorDownBranch: a call whose _outputPath branches on
// failure writes its error there, and that data block shows it; the
// error message after it says that the call failed and where its error
// went, rather than the error again (an API's error can be long). A call
// with no failure branch, and a failure the branch could not take, are
// told in full.
func TestPrefixErrorDownBranch(t *testing.T) {
	reg := echoReg()
	detail := strings.Repeat("the payment service answered 402 with a long body; ", 8)
	reg.Tool("pay", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	reg.Activity("pay", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("card_declined: " + detail + string(c.Args()))
	}))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"pay"},{"type":"data","kind":"state","data":{"s":"text"}},{"type":"text","text":"go"}]`)
	res, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"pay","n":1,"_outputPath":"†state.receipt || †state.error"},{"_tool":"pay","n":2,"_outputPath":"†state.r2"},`+
			`{"_tool":"pay","n":3,"_outputPath":"†state.r3 || †state.s","_outputMethod":"push"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.p"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	checkLoopExtends(t, reqs, 3)
	if got := lookup(t, res.Log, "†state.error.error"); !strings.Contains(got, "card_declined") {
		t.Errorf("†state.error = %s", got)
	}
	for i, r := range reqs[1:] {
		var all strings.Builder
		for _, m := range r.Messages {
			all.WriteString(m.Text + "\n")
		}
		for n, want := range []int{1, 1, 1} {
			if got := strings.Count(all.String(), detail+`{\"n\":`+strconv.Itoa(n+1)+`}`) + strings.Count(all.String(), detail+`{"n":`+strconv.Itoa(n+1)+`}`); got != want {
				t.Errorf("request %d says call %d's error %d times, want %d:\n%s", i+2, n+1, got, want, all.String())
			}
		}
		if !strings.Contains(all.String(), "Call 1 of the plan above (pay) failed; its error went down the failure branch of its _outputPath.") {
			t.Errorf("request %d does not say where call 1's error went:\n%s", i+2, all.String())
		}
	}
	t.Logf("requests 2 and 3: %d and %d bytes of messages", len(sentBytes(reqs[1]))-len(reqs[1].Schema), len(sentBytes(reqs[2]))-len(reqs[2].Schema))
}

// TestPrefixPlanLeavesReasoning: a call's _reasoningForCall is why the
// model makes it, written before it commits to the call (002); the plan
// of the step showed it, and so did an error that writes its call out,
// in every later request of the run. Plans and errors now show the calls
// without it: a sentence or two a call, for every call the run makes, in
// every request after. Each request still extends the one before, and
// an error still names its call by its place in the plan.
func TestPrefixPlanLeavesReasoning(t *testing.T) {
	reg := echoReg()
	reg.Tool("send", json.RawMessage(`{"type":"object","description":"Sends a report.","properties":{"text":{"type":"string"}},"required":["text"]}`))
	reg.Activity("send", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("mail server unavailable")
	}))
	why := func(n int) string {
		return fmt.Sprintf("Step %d needs this value recorded in the state before the report can be written and sent.", n)
	}
	call := func(n int, rest string) string {
		return `{"_reasoningForCall":"` + why(n) + `",` + rest + `}`
	}
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"send"},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[` + call(1, `"_tool":"put","v":1,"_outputPath":"†state.a"`) + `,` + call(2, `"_tool":"put","v":2,"_outputPath":"†state.b"`) + `,` + call(3, `"_tool":"send","text":"r"`) + `],"output":null}`,
		// the same call twice: its errors write it out
		`{"calls":[` + call(4, `"_tool":"send","text":"s"`) + `,` + call(4, `"_tool":"send","text":"s"`) + `,` + call(5, `"_tool":"put","v":5,"_outputPath":"†state.c"`) + `],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs, answers...)
	checkExtends(t, reqs)
	last := sentBytes(reqs[len(reqs)-1])
	for n := 1; n <= 5; n++ {
		if strings.Contains(last, why(n)) {
			t.Errorf("the last request shows the reasoning of call %d:\n%s", n, last)
		}
	}
	for _, s := range []string{
		"[{\"_tool\":\"put\",\"v\":1,\"_outputPath\":\"†state.a\"}\n,{\"_tool\":\"put\",\"v\":2,\"_outputPath\":\"†state.b\"}\n,{\"_tool\":\"send\",\"text\":\"r\"}\n]",
		"## Error\nCall 3 of the plan above (send) failed: runtime error: mail server unavailable",
		"## Error\nThe call {\"_tool\":\"send\",\"text\":\"s\"} failed: runtime error in send: mail server unavailable",
	} {
		if !strings.Contains(last, s) {
			t.Errorf("the last request does not hold %q:\n%s", s, last)
		}
	}
	_, total, _, _ := cacheFigures(reqs)
	t.Logf("%d requests: the last %d bytes; %d in all", len(reqs), len(last), total)

	// Compacted, resumed and under RenderSnapshot alike.
	_, compacted := runLoop(t, agent.Config{Registry: reg, Concurrency: 1, CompactAt: 200}, msgs, answers...)
	_, snapshot := runLoop(t, agent.Config{Registry: reg, Concurrency: 1, Rendering: agent.RenderSnapshot}, msgs, answers...)
	for name, r := range map[string]provider.Request{"compacted": compacted[len(compacted)-1], "snapshot": snapshot[len(snapshot)-1]} {
		for n := 1; n <= 5; n++ {
			if s := sentBytes(r); strings.Contains(s, why(n)) {
				t.Errorf("%s: the last request shows the reasoning of call %d:\n%s", name, n, s)
			}
		}
	}
	before, after := cutRun(t, reg, msgs, 1, 3, answers...)
	if got := sentBytes(after[len(after)-1]); got != last {
		t.Errorf("resumed: %s", firstDiff(last, got))
	}
	checkExtends(t, append(before, after...))
}

// TestPrefixInstancesErrorNamesCall: a call of an instanced plan
// (ExecutePlanInstances) that fails is the plan's call with the
// instance's _instance added, which the plan does not hold as such: its
// error wrote it out, once per instance it failed in, long parameters
// and all. It now names the call by its place in the plan and the
// instance, as the loop that goes on from the log reads it.
func TestPrefixInstancesErrorNamesCall(t *testing.T) {
	reg := echoReg()
	reg.Tool("send", json.RawMessage(`{"type":"object","description":"Sends a report.","properties":{"text":{"type":"string"},"to":{"type":"string"}},"required":["text"]}`))
	reg.Activity("send", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("mail server unavailable")
	}))
	letter := strings.Repeat("Your order is on its way; it ships from the north warehouse. ", 6)
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"send"},
		{"type":"data","kind":"input","_instance":"a","data":{"item":"a"}},{"type":"data","kind":"input","_instance":"b","data":{"item":"b"}},{"type":"data","kind":"input","_instance":"c","data":{"item":"c"}}]`)
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"put","v":"†input.item","_outputPath":"†state.kept"}`),
		json.RawMessage(`{"_tool":"send","text":"` + letter + `","to":"†state.kept","_outputPath":"†state.sent"}`)}
	res, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg, Clock: fixed, Concurrency: 1}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	_, reqs := runLoop(t, agent.Config{Registry: reg}, append(res.Log.Messages(), message.Text("what failed?")), `{"calls":[],"output":{"done":true}}`)
	first := sentBytes(reqs[0])
	if n := strings.Count(first, letter); n != 1 {
		t.Errorf("the request holds the letter %d times, want once (in the plan):\n%s", n, first)
	}
	for _, id := range []string{"a", "b", "c"} {
		if want := "## Error\nCall 2 of the plan above (send) failed for _instance " + id + ": runtime error: mail server unavailable"; !strings.Contains(first, want) {
			t.Errorf("no %q in:\n%s", want, first)
		}
	}
	t.Logf("the loop's first request: %d bytes, %d of messages", len(first), len(first)-len(reqs[0].Schema))
}

// TestPrefixUpdatesShareHeading: the writes of a step come one after
// the other, each a data update with its heading ("## Data update:
// ¶state"), though the reference of each line already names the kind.
// An update right after one of the same data identity leaves the heading
// out; what an update says depends only on the messages before it, so
// each request still extends the one before, and a resumed run renders
// as the run did.
func TestPrefixUpdatesShareHeading(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},
		{"type":"data","kind":"state","data":{"list":[]}},{"type":"data","kind":"state","_instance":"a","data":{"n":0}},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.x"},{"_tool":"put","v":2,"_outputPath":"†state.list","_outputMethod":"push"},{"_tool":"put","v":3,"_outputPath":"†state.y"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":4,"_outputPath":"†state.z"},{"_tool":"put","_instance":"a","v":5,"_outputPath":"†state.n"},{"_tool":"put","_instance":"a","v":6,"_outputPath":"†state.m"},{"_tool":"put","v":7,"_outputPath":"†state.list","_outputMethod":"push"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	_, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, msgs, answers...)
	checkExtends(t, reqs)
	var texts []string
	for _, m := range reqs[len(reqs)-1].Messages {
		texts = append(texts, m.Text)
	}
	want := []string{
		"## Data update: ¶state\nset †state.x: 1", "push †state.list: 2", "set †state.y: 3",
		"## Data update: ¶state\nset †state.z: 4", "## Data update: ¶state (_instance: a)\nset †state.n: 5", "set †state.m: 6", "## Data update: ¶state\npush †state.list: 7",
	}
	var got []string
	for _, s := range texts {
		if strings.HasPrefix(s, "## Data update") || strings.HasPrefix(s, "set ") || strings.HasPrefix(s, "push ") {
			got = append(got, s)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("updates:\n%q\nwant\n%q", got, want)
	}
	last := sentBytes(reqs[len(reqs)-1])
	_, total, _, _ := cacheFigures(reqs)
	t.Logf("%d requests: the last %d bytes, %d of messages; %d in all", len(reqs), len(last), len(last)-len(reqs[len(reqs)-1].Schema), total)
	_, after := cutRun(t, echoReg(), msgs, 1, 3, answers...)
	if got := sentBytes(after[len(after)-1]); got != last {
		t.Errorf("resumed: %s", firstDiff(last, got))
	}
}
