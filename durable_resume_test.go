package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"

	"github.com/augceo/agent"
	"github.com/augceo/agent/ref"
)

// A tool that declares its own _instance (so the composed schema never
// offered the enum) lets a call name a new instance: its output creates it.
func TestInstancingOwnInstanceTool(t *testing.T) {
	reg := echoReg()
	reg.Tool("open", json.RawMessage(`{"type":"object","description":"Opens a new work item.","properties":{"_instance":{"type":"string","description":"the new item's id"},"v":{}},"required":["v"]}`))
	reg.Activity("open", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`"opened"`)}, nil
	}))
	ctx := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"open"},
	{"type":"data","kind":"input","_instance":"a","data":{"item":"a"}},{"type":"text","text":"go"}]`)
	res, _ := runLoop(t, agent.Config{Registry: reg}, ctx,
		`{"calls":[{"_tool":"open","_instance":"new","v":1,"_outputPath":"†state.s"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	if errs := planErrors(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	if got, err := ref.EvalString(res.Log.Instance("new"), "†state.s"); err != nil || !strings.Contains(string(got), "opened") {
		t.Errorf("instance new's s: %s, %v", got, err)
	}
}

// A run is cancelled while a call of its step waits for room (nothing is
// cut short: the running call returns its value). The step did not end:
// its plan stays out of the journal, and the resume runs the waiting call
// before it, so the log is the uninterrupted run's.
func TestResumeCutWhileCallsWaitForRoom(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"stop","_outputPath":"†state.a"},{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"stop"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	run := func(cut bool) *agent.RunResult {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		streamed := make(chan struct{})
		reg := echoReg()
		reg.Tool("stop", json.RawMessage(`{"type":"object"}`))
		reg.Activity("stop", agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
			<-streamed
			if cut {
				cancel() // Ctrl-C as the call returns: it is not cut short
			}
			return agent.Value("a")
		}))
		st := store.NewMemory()
		cfg := agent.Config{Registry: reg, Concurrency: 1, Clock: fixed, Store: st, RunID: "w", Provider: scripted.Solutions(answers...)}
		var runErr error
		var res *agent.RunResult
		for ev, err := range agent.Events(ctx, cfg, anyOut, msgs) {
			if err != nil {
				runErr = err
				break
			}
			if ev.Kind == agent.EventUsage && ev.Call == nil && ev.Step == 1 {
				close(streamed)
			}
			if ev.Kind == agent.EventDone {
				res = ev.Result
			}
		}
		if !cut {
			if runErr != nil {
				t.Fatal(runErr)
			}
			return res
		}
		if !errors.Is(runErr, context.Canceled) {
			t.Fatalf("interrupted run: %v", runErr)
		}
		t.Logf("journal after the cut:\n%s", strings.Join(journalLog(t, journal(t, st, "w")), "\n"))
		cfg.Provider = scripted.Solutions(answers[1:]...)
		res, err := agent.Resume(context.Background(), cfg, "w")
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		sameLog(t, st, "w", res.Log)
		return res
	}
	want, got := run(false), run(true)
	if w, g := logJSON(t, want.Log.Messages()), logJSON(t, got.Log.Messages()); !slices.Equal(w, g) {
		t.Errorf("resumed log:\n%s\nwant (uninterrupted):\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// A call Confirm approved started and was cut short; the resume runs it
// again (idempotent) without asking Confirm a second time.
func TestResumeDoesNotConfirmAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := agent.NewRegistry()
	var runs atomic.Int64
	reg.Tool("pay", json.RawMessage(`{"type":"object"}`))
	reg.Activity("pay", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if runs.Add(1) == 1 {
			return interrupt(c, cancel)
		}
		return agent.Value("paid")
	})))
	var mu sync.Mutex
	asked := map[string]int{}
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "c", Clock: fixedClock,
		Provider: scripted.Solutions(`{"calls":[{"_tool":"pay","_outputPath":"†state.p"}],"output":null}`),
		Confirm: func(_ context.Context, c *agent.Call) (agent.Decision, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[c.ID]++
			return agent.Decision{}, nil
		}}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"pay"},{"type":"text","text":"Pay"}]`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"done"}`)
	if _, err := agent.Resume(context.Background(), cfg, "c"); err != nil {
		t.Fatal(err)
	}
	if asked["1.0"] != 1 {
		t.Errorf("Confirm asked %d times about call 1.0, which it approved before the cut", asked["1.0"])
	}
}

// Cut a step, then cut the resume while it finishes the step (slow run
// again, put still waiting, bad's error not yet in the log); a second
// resume must finish it as an uninterrupted run would.
func TestResumeCutTwice(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"put","v":"†state.s","_outputPath":"†state.x"},{"_tool":"bad","_outputPath":"†state.y"},{"_tool":"slow","v":2,"_outputPath":"†state.s"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"slow"},{"type":"tool","tool":"bad"},{"type":"text","text":"go"}]`)
	var cancelNow atomic.Pointer[context.CancelFunc]
	var slowRuns, putRuns atomic.Int64
	mk := func() *agent.Registry {
		reg := agent.NewRegistry()
		reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
		reg.Activity("put", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			putRuns.Add(1)
			var p struct{ V json.RawMessage }
			_ = json.Unmarshal(c.Args(), &p)
			return &agent.Result{Value: p.V}, nil
		}))
		reg.Tool("bad", json.RawMessage(`{"type":"object"}`))
		reg.Activity("bad", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return nil, errors.New("no stock")
		}))
		reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
		reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
			slowRuns.Add(1)
			if f := cancelNow.Swap(nil); f != nil {
				time.Sleep(10 * time.Millisecond) // let bad settle first
				return interrupt(c, *f)
			}
			return agent.Value("slow done")
		})))
		return reg
	}
	// uninterrupted
	st0 := store.NewMemory()
	want, err := agent.Run(context.Background(), agent.Config{Registry: mk(), Concurrency: 4, Clock: fixed, Store: st0, RunID: "u", Provider: scripted.Solutions(answers...)}, anyOut, msgs)
	if err != nil {
		t.Fatal(err)
	}
	slowRuns.Store(0)
	putRuns.Store(0)

	st := store.NewMemory()
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	c1 := context.CancelFunc(cancel1)
	cancelNow.Store(&c1)
	cfg := agent.Config{Registry: mk(), Concurrency: 4, Clock: fixed, Store: st, RunID: "w", Provider: scripted.Solutions(answers...)}
	if _, err := agent.Run(ctx1, cfg, anyOut, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	c2 := context.CancelFunc(cancel2)
	cancelNow.Store(&c2)
	cfg.Provider = scripted.Solutions(answers[1:]...)
	if _, err := agent.Resume(ctx2, cfg, "w"); !errors.Is(err, context.Canceled) {
		t.Fatalf("first resume: %v", err)
	}
	cfg.Provider = scripted.Solutions(answers[1:]...)
	var steps []int
	var res *agent.RunResult
	for ev, err := range agent.ResumeEvents(context.Background(), cfg, "w") {
		if err != nil {
			t.Fatalf("second resume: %v", err)
		}
		switch ev.Kind {
		case agent.EventStep:
			steps = append(steps, ev.Step)
		case agent.EventDone:
			res = ev.Result
		}
	}
	if putRuns.Load() != 1 || slowRuns.Load() != 3 {
		t.Errorf("put ran %d times, slow %d", putRuns.Load(), slowRuns.Load())
	}
	if w, g := logJSON(t, want.Log.Messages()), logJSON(t, res.Log.Messages()); !slices.Equal(w, g) {
		t.Errorf("resumed log:\n%s\nwant (uninterrupted):\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if !slices.Equal(steps, []int{2}) || res.Steps != 2 {
		t.Errorf("steps %v, result steps %d", steps, res.Steps)
	}
	if res.Usage != want.Usage {
		t.Errorf("usage %+v, want %+v", res.Usage, want.Usage)
	}
	sameLog(t, st, "w", res.Log)
}

// Fork at the message call A wrote, before the model wrote call B of the
// same step: in the fork, B was never written, and resuming the fork does
// not run it (its queued entry, after A's message, is left out).
func TestForkLeavesOutLaterCalls(t *testing.T) {
	reg := echoReg()
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	st := newCrashStore(1 << 40)
	aSettled := make(chan struct{})
	st.written = func(e store.Entry) {
		if e.Type == store.EntrySettled && e.Call == "1.0" {
			close(aSettled)
		}
	}
	var n atomic.Int64
	p := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			if n.Add(1) > 1 {
				yield(&provider.Chunk{Text: `{"calls":[],"output":{"done":true}}`, Done: true, Usage: &provider.Usage{Input: 1}}, nil)
				return
			}
			if !yield(&provider.Chunk{Text: `{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},`}, nil) {
				return
			}
			for done := false; !done; { // A runs and settles; then the model writes B
				select {
				case <-aSettled:
					done = true
				default:
					if !yield(&provider.Chunk{Thinking: "…"}, nil) {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			yield(&provider.Chunk{Text: `{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":null}`, Done: true, Usage: &provider.Usage{Input: 1}}, nil)
		}
	})
	cfg := agent.Config{Registry: reg, Store: st, RunID: "parent", Clock: fixed, Provider: p}
	parent, err := agent.Run(context.Background(), cfg, anyOut, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range journal(t, st, "parent") {
		t.Logf("%s %s %s", e.Type, e.Call, e.Data)
	}
	at := slices.IndexFunc(parent.Log.Messages(), func(m message.Message) bool { return m.Type == message.TypeData && m.Kind == "state" })
	if _, err := store.Fork(context.Background(), st, st, "parent", at, "fork", fixed()); err != nil {
		t.Fatal(err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":{"done":true}}`)
	res, err := agent.Resume(context.Background(), cfg, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"a":1}` {
		t.Errorf("the fork's state %s, want only a: the model had not written b by the fork's message", got)
	}
}

// With an instanced advisor, instances that appear mid-run change the
// composed schema once, as the tools' _instance does: the advisor's
// _instance opens too.
func TestInstancedAdvisorSchemaOpensOnce(t *testing.T) {
	ctx := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"load"},
	{"type":"advisor","id":"perItem","on":"request","isInstanced":true,"role":"Judges each item."},
	{"type":"data","kind":"input","_instance":"a","data":{"item":"a"}},{"type":"text","text":"go"}]`)
	ops := `"advisors":[{"id":"perItem","_instance":"a","calls":"{}"}],`
	answers := []string{
		`{` + ops + `"calls":[{"_tool":"load","id":"b","_outputPath":"†state.loaded"}],"output":null}`,
		`{` + ops + `"calls":[{"_tool":"load","id":"c","_outputPath":"†state.loaded"}],"output":null}`,
		`{` + ops + `"calls":[{"_tool":"load","id":"d","_outputPath":"†state.loaded"}],"output":null}`,
		`{` + ops + `"calls":[],"output":{"done":true}}`}
	_, reqs := runLoop(t, agent.Config{Registry: instancesReg(), Concurrency: 1}, ctx, answers...)
	var changes []string
	for _, b := range prefixBreaks(reqs) {
		if strings.Contains(b, "composed schema changed") {
			changes = append(changes, b)
		}
	}
	if len(changes) > 1 {
		t.Errorf("%d schema changes in %d requests, want 1:\n%s", len(changes), len(reqs), strings.Join(changes, "\n"))
	}
}

// put names instance b, which load (after it in the model's order) brings
// in the same step; the run is cut while load runs, and resumed.
func TestInstancingSameStepResumed(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"put","_instance":"b","v":1,"_outputPath":"†state.n"},{"_tool":"load","id":"b","_outputPath":"†state.loaded"}],"output":null}`,
		`{"calls":[{"_tool":"put","_instance":"b","v":"†state.n","_outputPath":"†state.m"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	run := func(cut bool) (*agent.RunResult, []provider.Request) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cutNow atomic.Bool
		cutNow.Store(cut)
		reg := echoReg()
		reg.Tool("load", json.RawMessage(`{"type":"object","description":"Loads a work item as an instance.","properties":{"id":{"type":"string"}},"required":["id"]}`))
		reg.Activity("load", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
			if cutNow.Swap(false) {
				return interrupt(c, cancel)
			}
			var p struct{ ID string }
			_ = json.Unmarshal(call.Args(), &p)
			m := message.Data(message.KindInput, json.RawMessage(`{"item":"`+p.ID+`"}`))
			m.Instance = p.ID
			return &agent.Result{Messages: []message.Message{m}}, nil
		})))
		st := store.NewMemory()
		p := scripted.Solutions(answers...)
		cfg := agent.Config{Registry: reg, Concurrency: 1, Clock: fixed, Store: st, RunID: "i", Provider: p}
		res, err := agent.Run(ctx, cfg, anyOut, ctxOf(t, instancesContext))
		if !cut {
			if err != nil {
				t.Fatal(err)
			}
			return res, p.Requests()
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		rest := scripted.Solutions(answers[1:]...)
		cfg.Provider = rest
		res, err = agent.Resume(context.Background(), cfg, "i")
		if err != nil {
			t.Fatal(err)
		}
		sameLog(t, st, "i", res.Log)
		return res, append(p.Requests(), rest.Requests()...)
	}
	want, wreqs := run(false)
	got, greqs := run(true)
	if errs := planErrors(want.Log); len(errs) != 0 {
		t.Errorf("uninterrupted errors %q", errs)
	}
	if w, g := logJSON(t, want.Log.Messages()), logJSON(t, got.Log.Messages()); !slices.Equal(w, g) {
		t.Errorf("resumed log:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	if a, b := fmt.Sprint(wreqs[len(wreqs)-1].Messages), fmt.Sprint(greqs[len(greqs)-1].Messages); a != b || string(wreqs[len(wreqs)-1].Schema) != string(greqs[len(greqs)-1].Schema) {
		t.Errorf("last requests differ")
	}
}

// Twelve calls, two of them (1.10, 1.11) waiting on slow, cut while slow
// runs: the plan keeps the model's order and each call runs once.
func TestResumeManyCallsPlanOrder(t *testing.T) {
	var calls []string
	calls = append(calls, `{"_tool":"slow","v":0,"_outputPath":"†state.s"}`)
	for i := 1; i < 10; i++ {
		calls = append(calls, fmt.Sprintf(`{"_tool":"put","v":%d,"_outputPath":"†state.p%d"}`, i, i))
	}
	calls = append(calls, `{"_tool":"put","v":"†state.s","_outputPath":"†state.p10"}`, `{"_tool":"put","v":"†state.s","_outputPath":"†state.p11"}`)
	answers := []string{`{"calls":[` + strings.Join(calls, ",") + `],"output":null}`, `{"calls":[],"output":{"done":true}}`}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var slowRuns atomic.Int64
	var mu sync.Mutex
	ran := map[string]int{}
	reg := echoReg()
	reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
		if slowRuns.Add(1) == 1 {
			time.Sleep(20 * time.Millisecond)
			return interrupt(c, cancel)
		}
		return agent.Value("slow")
	})))
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Concurrency: 3, Clock: fixed, Store: st, RunID: "m", Provider: scripted.Solutions(answers...),
		Confirm: func(_ context.Context, c *agent.Call) (agent.Decision, error) {
			mu.Lock()
			ran[c.ID]++
			mu.Unlock()
			return agent.Decision{}, nil
		}}
	if _, err := agent.Run(ctx, cfg, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut: %v", err)
	}
	cfg.Provider = scripted.Solutions(answers[1:]...)
	res, err := agent.Resume(context.Background(), cfg, "m")
	if err != nil {
		t.Fatal(err)
	}
	if plans := plansOf(res.Log); len(plans) != 1 || plans[0] != "["+strings.Join(calls, ",")+"]" {
		t.Errorf("plans %q", plans)
	}
	for id, n := range ran {
		if n != 1 && id != "1.0" {
			t.Errorf("call %s confirmed %d times", id, n)
		}
	}
	if len(ran) != 12 {
		t.Errorf("confirmed %d calls", len(ran))
	}
	if errs := planErrors(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	sameLog(t, st, "m", res.Log)
}

// A plan run: bad fails, slow is cut short; resume. bad's error message
// must be in the log once.
func TestPlanResumeErrorsOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := agent.NewRegistry()
	var slowRuns atomic.Int64
	badDone := make(chan struct{})
	reg.Tool("bad", json.RawMessage(`{"type":"object"}`))
	reg.Activity("bad", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		defer close(badDone)
		return nil, errors.New("no stock")
	}))
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if slowRuns.Add(1) == 1 {
			<-badDone
			time.Sleep(10 * time.Millisecond)
			return interrupt(c, cancel)
		}
		return agent.Value("slow")
	})))
	plan := planOf(t, `[{"_tool":"bad","_outputPath":"†state.b"},{"_tool":"slow","_outputPath":"†state.s"}]`)
	msgs := planCtx(t, `[{"type":"tool","tool":"bad"},{"type":"tool","tool":"slow"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "p", Clock: fixedClock}
	if _, err := agent.ExecutePlan(ctx, cfg, plan, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut: %v", err)
	}
	res, err := agent.Resume(context.Background(), cfg, "p")
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); len(errs) != 1 {
		t.Errorf("errors %q", errs)
	}
	sameLog(t, st, "p", res.Log)
	// The log is the uninterrupted run's: the plan and its errors come
	// after every output, whether or not the run was cut.
	cfg.Store, cfg.RunID = nil, ""
	full, err := agent.ExecutePlan(context.Background(), cfg, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, m := range res.Log.Messages() {
		got = append(got, string(m.Type))
	}
	for _, m := range full.Log.Messages() {
		want = append(want, string(m.Type))
	}
	if !slices.Equal(got, want) {
		t.Errorf("resumed log %q, want the uninterrupted run's %q", got, want)
	}
}

// A step with advice whose calls all settled, crashed before its plan:
// the resume finishes the step and keeps the step's advice in the result.
// The call settles as the model still writes its answer, so its settling
// is written then, apart from the plan.
func TestResumeKeepsAdviceWithNothingToRun(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("delay", json.RawMessage(`{"type":"object"}`))
	reg.Activity("delay", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return agent.Value("delayed") }))
	msgs := ctxOf(t, `[{"type":"tool","tool":"delay"},`+riskAnalyst+`,{"type":"text","text":"Ship?"}]`)
	answers := []string{`{` + riskVotes + `,"calls":[{"_tool":"delay","_outputPath":"†state.d"}],"output":null}`,
		`{"advisors":[],"calls":[],"output":"done"}`}
	want, err := agent.Run(context.Background(), agent.Config{Registry: reg, Clock: fixedClock, Provider: scripted.Solutions(answers...)}, json.RawMessage(`{"type":"string"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	st := newCrashStore(1 << 40)
	st.crashOn = func(e store.Entry) bool {
		return e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"type":"plan"`)
	}
	settled := make(chan struct{})
	st.written = func(e store.Entry) {
		if e.Type == store.EntrySettled && e.Call == "1.0" {
			close(settled)
		}
	}
	first, rest := strings.CutSuffix(answers[0], `],"output":null}`)
	if !rest {
		t.Fatal("the first answer does not end with its calls")
	}
	p := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			if !yield(&provider.Chunk{Text: first}, nil) {
				return
			}
			for done := false; !done; { // delay runs and settles; then the answer ends
				select {
				case <-settled:
					done = true
				default:
					if !yield(&provider.Chunk{Thinking: "…"}, nil) {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			yield(&provider.Chunk{Text: `],"output":null}`, Done: true}, nil)
		}
	})
	cfg := agent.Config{Registry: reg, Store: st, RunID: "a", Clock: fixedClock, Provider: p}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, errCrash) {
		t.Fatalf("crash: %v", err)
	}
	es := journal(t, st, "a")
	for _, e := range es {
		if e.Type == store.EntryStarted && !slices.ContainsFunc(es, func(s store.Entry) bool { return s.Type == store.EntrySettled && s.Call == e.Call }) {
			t.Fatalf("call %s did not settle before the crash: the resume has a call to run", e.Call)
		}
	}
	st2 := restart(t, st, "a")
	cfg.Store, cfg.Provider = st2, scripted.Solutions(answers[1:]...)
	res, err := agent.Resume(context.Background(), cfg, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Advice) != len(res.Advice) {
		t.Errorf("advice: uninterrupted %d opinions, resumed %d", len(want.Advice), len(res.Advice))
	}
}

// matrixRun is the run of the crash and break matrices: step 1 has an
// idempotent call (slow), a call that is not (once) waiting for it, a
// failing call (bad) and a fire-and-forget call (notify); step 2 calls
// once again; then the output. runs counts the runs of once and notify.
type matrixRun struct {
	reg    *agent.Registry
	answer provider.Provider
	msgs   []message.Message
	mu     sync.Mutex
	runs   map[string]int
}

func newMatrixRun(t *testing.T) *matrixRun {
	step1 := `{"calls":[{"_tool":"slow","_outputPath":"†state.s"},{"_tool":"once","v":"†state.s","_outputPath":"†state.x"},{"_tool":"bad","_outputPath":"†state.b"},{"_tool":"notify"}],"output":null}`
	step2 := `{"calls":[{"_tool":"once","v":3,"_outputPath":"†state.y"}],"output":null}`
	done := `{"calls":[],"output":"done"}`
	r := &matrixRun{reg: agent.NewRegistry(), runs: map[string]int{}}
	r.answer = provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		text := fmt.Sprint(req.Messages)
		a := step1
		switch {
		case strings.Contains(text, "†state.y"):
			a = done
		case strings.Contains(text, "†state.x"):
			a = step2
		}
		return scripted.Solutions(a).Generate(c, req)
	})
	r.msgs = ctxOf(t, `[{"type":"tool","tool":"slow"},{"type":"tool","tool":"once"},{"type":"tool","tool":"bad"},{"type":"tool","tool":"notify"},{"type":"text","text":"Go"}]`)
	count := func(k string) {
		r.mu.Lock()
		r.runs[k]++
		r.mu.Unlock()
	}
	wait := func(c context.Context, d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-c.Done():
			return c.Err()
		}
	}
	reg := r.reg
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if err := wait(c, time.Millisecond); err != nil {
			return nil, err
		}
		return agent.Value("s")
	})))
	reg.Tool("once", json.RawMessage(`{"type":"object","properties":{"v":{}}}`))
	reg.Activity("once", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		count("once " + string(c.Args()))
		return agent.Value("o")
	}))
	reg.Tool("bad", json.RawMessage(`{"type":"object"}`))
	reg.Activity("bad", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return nil, errors.New("no stock")
	}))
	reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
	reg.Activity("notify", agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		count("notify")
		if err := wait(c, 2*time.Millisecond); err != nil {
			return nil, err
		}
		return agent.Value("n")
	}))
	return r
}

// check checks the result of the run's last resume: no call that is not
// idempotent ran twice, each step's plan and the failed call's error
// message are in the log once, the output is the run's, and the journal's
// log is the run's.
func (r *matrixRun) check(t *testing.T, label string, res *agent.RunResult, st store.Store, id string) {
	t.Helper()
	for k, v := range r.runs {
		if v > 1 {
			t.Errorf("%s: %s ran %d times", label, k, v)
		}
	}
	plans := plansOf(res.Log)
	per := map[string]int{}
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeError {
			per[string(m.Failed)]++
		}
	}
	dup := false
	for _, k := range per {
		dup = dup || k > 1
	}
	if dup || per[`{"_tool":"bad","_outputPath":"†state.b"}`] != 1 || len(plans) != 2 || plans[0] == plans[1] {
		t.Errorf("%s: errors %q plans %q", label, planErrors(res.Log), plans)
	}
	if res.Solution == nil || string(res.Solution.Output) != `"done"` {
		t.Errorf("%s: solution %+v", label, res.Solution)
	}
	sameLog(t, st, id, res.Log)
}

// TestResumeCrashMatrix crashes the run at every Append, then the resume
// at every Append, then resumes to the end.
func TestResumeCrashMatrix(t *testing.T) {
	finals := 0
	for n := int64(1); n < 14; n++ {
		for m := int64(1); m < 10; m++ {
			r := newMatrixRun(t)
			st := newCrashStore(n)
			cfg := agent.Config{Registry: r.reg, Store: st, RunID: "x", Clock: fixedClock, Provider: r.answer}
			if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), r.msgs); err == nil {
				continue
			}
			if _, err := st.Load(context.Background(), "x"); err != nil {
				continue // never created
			}
			st2 := restart(t, st, "x")
			st2.left.Store(m)
			cfg.Store = st2
			if _, err := agent.Resume(context.Background(), cfg, "x"); err == nil {
				continue
			}
			st3 := restart(t, st2, "x")
			cfg.Store = st3
			res, err := agent.Resume(context.Background(), cfg, "x")
			if err != nil {
				t.Errorf("n=%d m=%d: final resume: %v", n, m, err)
				continue
			}
			finals++
			r.check(t, fmt.Sprintf("n=%d m=%d", n, m), res, st3, "x")
		}
	}
	if finals == 0 {
		t.Error("no run needed a final resume")
	}
}

// TestResumeBreakMatrix is TestResumeCrashMatrix with the consumer
// stopping the run after n events and the resume after m events (a break
// leaves the run resumable).
func TestResumeBreakMatrix(t *testing.T) {
	// drain stops at event stopAt or the first after it, once the first
	// answer is whole when answered is false: a stop before that cuts the
	// model's answer short, and the calls it had yet to write are gone.
	drain := func(events iter.Seq2[agent.RunEvent, error], stopAt int, answered bool) (*agent.RunResult, error, bool) {
		k := 0
		for ev, err := range events {
			if err != nil {
				return nil, err, false
			}
			if ev.Kind == agent.EventDone {
				return ev.Result, nil, false
			}
			answered = answered || ev.Kind == agent.EventUsage && ev.Call == nil
			if k++; k >= stopAt && stopAt > 0 && answered {
				return nil, nil, true
			}
		}
		return nil, nil, false
	}
	finals := 0
	for n := 1; n < 40; n += 2 {
		for m := 1; m < 30; m += 3 {
			r := newMatrixRun(t)
			st := store.NewMemory()
			cfg := agent.Config{Registry: r.reg, Store: st, RunID: "x", Clock: fixedClock, Provider: r.answer}
			if _, err, stopped := drain(agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), r.msgs), n, false); !stopped {
				if err != nil {
					t.Fatalf("n=%d: %v", n, err)
				}
				continue
			}
			if _, err, stopped := drain(agent.ResumeEvents(context.Background(), cfg, "x"), m, true); !stopped {
				if err != nil {
					t.Fatalf("n=%d m=%d: %v", n, m, err)
				}
				continue
			}
			res, err, _ := drain(agent.ResumeEvents(context.Background(), cfg, "x"), -1, true)
			if err != nil {
				t.Errorf("n=%d m=%d: final resume: %v", n, m, err)
				continue
			}
			finals++
			r.check(t, fmt.Sprintf("n=%d m=%d", n, m), res, st, "x")
		}
	}
	if finals == 0 {
		t.Error("no run needed a final resume")
	}
}

// A resume that cannot take its run says so once, naming the run once
// for the resume and once for the store.
func TestResumeErrorNamesTheRunOnce(t *testing.T) {
	st := store.NewMemory()
	_, err := agent.Resume(context.Background(), agent.Config{Store: st, Registry: agent.NewRegistry()}, "nope")
	if !errors.Is(err, store.ErrNotFound) || err.Error() != "agent: resume nope: acquire run nope: store: run not found" {
		t.Errorf("got %v", err)
	}
}

// TestResumeDelegateTokenBudget: a delegate call a resume runs, which
// was still waiting when the run stopped, may spend what the run's
// TokenBudget leaves, not the whole budget again.
func TestResumeDelegateTokenBudget(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reg := senderRegistry(t)
	reg.Tool("stop", json.RawMessage(`{"type":"object"}`))
	reg.Activity("stop", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		cancel() // Ctrl-C as the call returns: send has not started
		return agent.Value("a")
	}))
	first := scripted.New(
		// The parent's first step spends 600 of its 1000 tokens.
		scripted.Response{Solutions: []string{`{"calls":[],"output":null}`}, Usage: usage(600)},
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"stop","_outputPath":"†state.a"},{"_tool":"send","text":"hi","_outputPath":"†state.sent"}],"output":null}`}, Usage: usage(10)},
	)
	st := store.NewMemory()
	cfg := agent.Config{Provider: first, Registry: reg, TokenBudget: 1000, Concurrency: 1, Store: st, RunID: "b", Clock: fixed}
	msgs := ctxOf(t, `[{"type":"tool","tool":"stop"},{"type":"tool","tool":"send"},{"type":"text","text":"Send hi"}]`)
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	// The sub-run is never done: 300 tokens a step.
	notDone := scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)}
	again := scripted.New(notDone, notDone, notDone, notDone)
	cfg.Provider = again
	res, err := agent.Resume(t.Context(), cfg, "b")
	if !errors.Is(err, agent.ErrTokenBudget) {
		t.Fatalf("resume: err %v, want the budget spent", err)
	}
	// The sub-run counts into the run's budget, 610 of it spent before
	// the resume: it stopped after two requests.
	if n := len(again.Requests()); n != 2 {
		t.Errorf("%d requests of the resumed sub-run, want 2", n)
	}
	if res.Usage.Input != 1210 {
		t.Errorf("usage %+v, want 1210 input tokens", res.Usage)
	}
}

// A fork at a message written before a call failed does not keep the
// failure: the call's error message is appended at the end of its tick,
// after its settling, so both are after the fork's message, and resuming
// the fork runs the call again (after a provider's outage, say). A fork
// at the message a failing call wrote to its error branch keeps that
// call's settling, as it keeps a call's that succeeded.
func TestForkRunsCallsThatFailedAfterItsMessage(t *testing.T) {
	var fail atomic.Bool
	var ran atomic.Int64
	reg := agent.NewRegistry()
	reg.Tool("charge", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	reg.Activity("charge", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		ran.Add(1)
		if fail.Load() {
			return nil, errors.New("provider outage")
		}
		return agent.Value(map[string]int{"ok": 1})
	}))
	msgs := ctxOf(t, `[{"type":"tool","tool":"charge"},{"type":"data","kind":"input","data":{"n":1}}]`)
	for _, tt := range []struct {
		name, outputPath string
		at               func(*message.Log) int // the message to fork at
		runs             bool                   // whether the fork's resume runs charge again
	}{
		{"before the failure", "†state.receipt", func(l *message.Log) int { return 1 }, true},
		{"at the error branch", "†state.receipt || †state.declined", func(l *message.Log) int {
			return slices.IndexFunc(l.Messages(), func(m message.Message) bool { return m.Kind == "state" })
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := []json.RawMessage{json.RawMessage(`{"_tool":"charge","n":"†input.n","_outputPath":"` + tt.outputPath + `"}`)}
			st := store.NewMemory()
			cfg := agent.Config{Registry: reg, Store: st, RunID: "parent", Clock: fixed}
			fail.Store(true)
			parent, err := agent.ExecutePlan(context.Background(), cfg, plan, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if errs := planErrors(parent.Log); len(errs) != 1 {
				t.Fatalf("the parent's errors %q, want the one of charge", errs)
			}
			at := tt.at(parent.Log)
			if _, err := store.Fork(context.Background(), st, st, "parent", at, "fork", fixed()); err != nil {
				t.Fatal(err)
			}
			fail.Store(false)
			ran.Store(0)
			res, err := agent.Resume(context.Background(), cfg, "fork")
			if err != nil {
				t.Fatal(err)
			}
			if got := ran.Load() == 1; got != tt.runs {
				t.Errorf("the fork's resume ran charge %d times; want it to run again: %v", ran.Load(), tt.runs)
			}
			if errs := planErrors(res.Log); (len(errs) > 0) == tt.runs {
				t.Errorf("the fork's errors %q", errs)
			}
			sameLog(t, st, "fork", res.Log)
		})
	}
}

// TestResumeOneWriteReopens: a resume that goes on by running a call
// again makes the run running again and journals the call's start in one
// write, a Save with that entry: nothing comes between the two but the
// resume's own work, so a second write would only cost a round trip.
func TestResumeOneWriteReopens(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  func(ctx context.Context, cfg agent.Config) error
	}{
		{"loop", func(ctx context.Context, cfg agent.Config) error {
			cfg.Provider = scripted.Solutions(`{"calls":[{"_tool":"again","_outputPath":"†state.s"}],"output":null}`, `{"calls":[],"output":"†state.s"}`)
			_, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"again"}]`))
			return err
		}},
		{"plan", func(ctx context.Context, cfg agent.Config) error {
			_, err := agent.ExecutePlan(ctx, cfg, planOf(t, `[{"_tool":"again","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"again"}]`))
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("again", json.RawMessage(`{"type":"object"}`))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var runs atomic.Int64
			reg.Activity("again", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
				if runs.Add(1) == 1 {
					return interrupt(c, cancel) // the first attempt is cut short
				}
				return agent.Value("done")
			})))
			st := &appendsStore{Memory: store.NewMemory()}
			cfg := agent.Config{Registry: reg, Store: st, RunID: "r"}
			if err := tt.run(ctx, cfg); !errors.Is(err, context.Canceled) {
				t.Fatalf("the cut run: %v", err)
			}
			st.appends, st.saved = nil, nil
			cfg.Provider = scripted.Solutions(`{"calls":[],"output":"†state.s"}`)
			res, err := agent.Resume(t.Context(), cfg, "r")
			if err != nil || stateOf(t, res.Log) != `{"s":"done"}` {
				t.Fatalf("resume: %v", err)
			}
			if len(st.appends) == 0 {
				t.Fatal("the resume wrote nothing")
			}
			first, run := st.appends[0], st.saved[0]
			if run.Status != store.Running || len(first) != 1 || first[0].Type != store.EntryStarted {
				t.Errorf("the resume's first write saved the run %q with entries %v; want it running, with the call's start", run.Status, entryTypes(first))
			}
			// Then the call's settling, the step's plan, and the run's end
			// with its last Save (with the plan, for a plan run).
			if want := map[string]int{"loop": 4, "plan": 3}[tt.name]; len(st.appends) != want {
				var got []map[store.EntryType]int
				for _, es := range st.appends {
					got = append(got, entryTypes(es))
				}
				t.Errorf("the resume made %d writes, want %d: %v", len(st.appends), want, got)
			}
		})
	}
}

// TestResumeCrashAtReopen: a resume that crashes at its first write,
// which saves the run running again with the start of the call it runs
// again, leaves the run as it found it, and the next resume runs the
// call and ends the run.
func TestResumeCrashAtReopen(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("again", json.RawMessage(`{"type":"object"}`))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var runs atomic.Int64
	reg.Activity("again", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if runs.Add(1) == 1 {
			return interrupt(c, cancel)
		}
		return agent.Value("done")
	})))
	st := newCrashStore(1 << 40)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "r",
		Provider: scripted.Solutions(`{"calls":[{"_tool":"again","_outputPath":"†state.s"}],"output":null}`)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"again"}]`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut run: %v", err)
	}
	before := journal(t, st, "r")
	st.left.Store(0) // the resume's first write crashes
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"†state.s"}`)
	if _, err := agent.Resume(t.Context(), cfg, "r"); !errors.Is(err, errCrash) {
		t.Fatalf("the resume that crashed: %v", err)
	}
	if run, _ := st.Load(t.Context(), "r"); run.Status != store.Interrupted {
		t.Errorf("after the crash the run is %s, want it interrupted as it was", run.Status)
	}
	if after := journal(t, st, "r"); len(after) != len(before) {
		t.Errorf("the crashed resume left %d entries in the journal, want none", len(after)-len(before))
	}
	if _, err := agent.Resume(t.Context(), cfg, "r"); !errors.Is(err, store.ErrLeased) {
		t.Fatalf("a resume while the crashed one's lease holds the run: %v", err)
	}
	res, err := agent.Resume(t.Context(), agent.Config{Registry: reg, Store: restart(t, st, "r"), Provider: cfg.Provider}, "r")
	if err != nil || stateOf(t, res.Log) != `{"s":"done"}` {
		t.Fatalf("the resume after the crash: %v", err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("the call ran %d times, want twice (cut, then resumed)", n)
	}
}
