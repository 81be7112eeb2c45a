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

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// The tests of this file stop loop runs while calls are unsettled, then
// resume them: Resume ends what the run left unfinished once, and goes on
// as the run would have.

// plansOf returns the plan messages of a log.
func plansOf(log *message.Log) []string {
	var plans []string
	for _, m := range log.Messages() {
		if m.Type == message.TypePlan {
			plans = append(plans, string(m.Plan))
		}
	}
	return plans
}

// TestResumeTwice stops a resume after it finished the step its run was
// cut in: the next resume does not run or report the call again, since the
// first one journaled how it settled.
func TestResumeTwice(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			reg := agent.NewRegistry()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var runs atomic.Int64
			var pay agent.Activity = agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
				if runs.Add(1) == 1 {
					return interrupt(c, cancel)
				}
				return agent.Value("paid")
			})
			if idempotent {
				pay = agent.Idempotent(pay)
			}
			reg.Tool("pay", json.RawMessage(`{"type":"object"}`))
			reg.Activity("pay", pay)
			st := store.NewMemory()
			cfg := agent.Config{Registry: reg, Store: st, RunID: "p", Clock: fixedClock, Provider: scripted.Solutions(
				`{"calls":[{"_tool":"pay","_outputPath":"†state.p"}],"output":null}`)}
			if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"pay"},{"type":"text","text":"Pay"}]`)); !errors.Is(err, context.Canceled) {
				t.Fatalf("cut run: %v", err)
			}
			// The first resume finishes step 1, then stops at a limit.
			cfg.Provider, cfg.MaxSteps = scripted.Solutions(), 1
			if _, err := agent.Resume(context.Background(), cfg, "p"); !errors.Is(err, agent.ErrMaxSteps) {
				t.Fatalf("first resume: %v", err)
			}
			ran := runs.Load()
			cfg.Provider, cfg.MaxSteps = scripted.Solutions(`{"calls":[],"output":"done"}`), 0
			res, err := agent.Resume(context.Background(), cfg, "p")
			if err != nil {
				t.Fatal(err)
			}
			errs, state := planErrors(res.Log), stateOf(t, res.Log)
			switch {
			case runs.Load() != ran:
				t.Errorf("the second resume ran pay again")
			case idempotent && (state != `{"p":"paid"}` || len(errs) != 0):
				t.Errorf("state %s, errors %q", state, errs)
			case !idempotent && (state != "" || len(errs) != 1):
				t.Errorf("state %s, errors %q", state, errs)
			}
			if plans := plansOf(res.Log); len(plans) != 1 {
				t.Errorf("plans %q", plans)
			}
			sameLog(t, st, "p", res.Log)
		})
	}
}

// TestResumeRestoresErrorsByCall restores the error message of a call the
// crash left without one, while another call of the same JSON has its own
// in the log: each call gets its error once, in the order they failed.
func TestResumeRestoresErrorsByCall(t *testing.T) {
	reg := agent.NewRegistry()
	release := make(chan struct{})
	settled := map[string]chan struct{}{"1.0": make(chan struct{}), "2.0": make(chan struct{})}
	reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
	reg.Activity("notify", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		if c.ID == "1.0" {
			<-release
			return nil, errors.New("late")
		}
		return nil, errors.New("early")
	}))
	reg.Tool("look", json.RawMessage(`{"type":"object"}`))
	reg.Activity("look", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		<-settled["2.0"] // its error message goes with step 2's plan
		return agent.Value("looked")
	}))
	// Idempotent: its settling goes in one Append with step 3's plan,
	// which the crash loses, so the resume runs it again.
	var waits atomic.Int64
	reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
	reg.Activity("wait", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if waits.Add(1) == 1 {
			close(release)
		}
		<-settled["1.0"]
		return agent.Value("waited")
	})))
	st := newCrashStore(1 << 40)
	st.written = func(e store.Entry) {
		if ch, ok := settled[e.Call]; ok && e.Type == store.EntrySettled {
			close(ch)
		}
	}
	st.crashOn = func(e store.Entry) bool { // step 3's plan, with 1.0's error and wait's settling
		return e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"type":"plan"`) && strings.Contains(string(e.Data), `wait`)
	}
	cfg := agent.Config{Registry: reg, Store: st, RunID: "e", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"notify"}],"output":null}`,                                           // in the background
		`{"calls":[{"_tool":"notify"},{"_tool":"look","_outputPath":"†state.l"}],"output":null}`, // the same call, failing at once
		`{"calls":[{"_tool":"wait","_outputPath":"†state.w"}],"output":null}`)}
	msgs := ctxOf(t, `[{"type":"tool","tool":"notify"},{"type":"tool","tool":"look"},{"type":"tool","tool":"wait"},{"type":"text","text":"Go"}]`)
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, errCrash) {
		t.Fatalf("crashed run: %v", err)
	}
	st2 := restart(t, st, "e")
	cfg.Store, cfg.Provider = st2, scripted.Solutions(`{"calls":[],"output":"done"}`)
	res, err := agent.Resume(context.Background(), cfg, "e")
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); !slices.Equal(errs, []string{"runtime error in notify: early", "runtime error in notify: late"}) {
		t.Errorf("errors %q, want early then late", errs)
	}
	if n := waits.Load(); n != 2 {
		t.Errorf("wait ran %d times, want 2: its settling was lost with the plan", n)
	}
	sameLog(t, st2, "e", res.Log)
}

// TestResumeResolvesInTheCallsLog runs again a background call a later
// step's write would change the arguments of: its references resolve in
// the log it started with, as in the attempt that was cut short.
func TestResumeResolvesInTheCallsLog(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var args []string
	changed := make(chan struct{})
	reg.Tool("set", json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`))
	reg.Activity("set", agent.Bind(func(_ context.Context, p struct {
		V string `json:"v"`
	}) (string, error) {
		if p.V == "b" {
			defer close(changed)
		}
		return p.V, nil
	}))
	reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
	reg.Activity("notify", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
		mu.Lock()
		args = append(args, string(call.Args()))
		mu.Unlock()
		if ctx.Err() == nil {
			<-changed
			return interrupt(c, cancel) // Ctrl-C once a later step changed what it read
		}
		return agent.Value("notified")
	})))
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "s", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"set","v":"a","_outputPath":"†state.x"}],"output":null}`,
		`{"calls":[{"_tool":"notify","text":"†state.x"}],"output":null}`, // in the background
		`{"calls":[{"_tool":"set","v":"b","_outputPath":"†state.x"}],"output":null}`,
		`{"calls":[],"output":"never"}`, // its background call is cut short
	)}
	msgs := ctxOf(t, `[{"type":"tool","tool":"set"},{"type":"tool","tool":"notify"},{"type":"text","text":"Go"}]`)
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"done"}`)
	res, err := agent.Resume(context.Background(), cfg, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(args, []string{`{"text":"a"}`, `{"text":"a"}`}) {
		t.Errorf("notify's arguments, cut short then resumed: %q", args)
	}
	if got := stateOf(t, res.Log); got != `{"x":"b"}` {
		t.Errorf("state %s", got)
	}
	sameLog(t, st, "s", res.Log)
}

// TestResumeAfterBackgroundSettled cuts a run short after a background
// call settled past its step's plan: that step ended, and Resume does not
// end it again.
func TestResumeAfterBackgroundSettled(t *testing.T) {
	t.Run("next step", func(t *testing.T) {
		reg := agent.NewRegistry()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release, settled := make(chan struct{}), make(chan struct{})
		reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
		reg.Activity("notify", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
			<-release
			return agent.Value("notified")
		}))
		st := newCrashStore(1 << 40)
		st.written = func(e store.Entry) {
			if e.Type == store.EntrySettled && e.Call == "1.0" {
				close(settled)
			}
		}
		step1 := scripted.Solutions(`{"calls":[{"_tool":"notify"}],"output":null}`)
		var n atomic.Int64
		p := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			if n.Add(1) == 1 {
				return step1.Generate(c, req)
			}
			return func(yield func(*provider.Chunk, error) bool) {
				close(release)
				for done := false; !done; { // the loop journals notify's settling as it streams
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
				cancel() // Ctrl-C while the model answers step 2
				yield(nil, c.Err())
			}
		})
		cfg := agent.Config{Registry: reg, Store: st, RunID: "bg", Clock: fixedClock, Provider: p}
		if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"notify"},{"type":"text","text":"Go"}]`)); !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		cfg.Provider = scripted.Solutions(`{"calls":[],"output":"done"}`)
		res, err := agent.Resume(context.Background(), cfg, "bg")
		if err != nil {
			t.Fatal(err)
		}
		if plans := plansOf(res.Log); len(plans) != 1 {
			t.Errorf("plans %q, want step 1's once", plans)
		}
		sameLog(t, st, "bg", res.Log)
	})
	t.Run("last step", func(t *testing.T) {
		// The step gave its output; its background calls run down, one
		// settles and the other is cut short: the run is interrupted,
		// and Resume runs the cut call again, then asks the model.
		reg := agent.NewRegistry()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release, settled := make(chan struct{}), make(chan struct{})
		var bRuns atomic.Int64
		reg.Tool("a", json.RawMessage(`{"type":"object"}`))
		reg.Activity("a", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
			<-release
			return agent.Value("a")
		}))
		reg.Tool("b", json.RawMessage(`{"type":"object"}`))
		reg.Activity("b", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
			if bRuns.Add(1) > 1 { // the resume's attempt
				return agent.Value("b")
			}
			<-settled
			return interrupt(c, cancel)
		})))
		st := newCrashStore(1 << 40)
		st.written = func(e store.Entry) {
			if e.Type == store.EntrySettled && e.Call == "1.0" {
				close(settled)
			}
		}
		cfg := agent.Config{Registry: reg, Store: st, RunID: "d", Clock: fixedClock, Provider: scripted.Solutions(
			`{"calls":[{"_tool":"a"},{"_tool":"b"}],"output":"done"}`)}
		var runErr error
		for ev, err := range agent.Events(ctx, cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"},{"type":"text","text":"Go"}]`)) {
			if err != nil {
				runErr = err
				break
			}
			if ev.Kind == agent.EventMessage && ev.Message.Type == message.TypePlan {
				close(release)
			}
		}
		if !errors.Is(runErr, context.Canceled) {
			t.Fatalf("cut run: %v", runErr)
		}
		p := scripted.Solutions(`{"calls":[],"output":"done"}`)
		cfg.Provider = p
		res, err := agent.Resume(context.Background(), cfg, "d")
		if err != nil {
			t.Fatal(err)
		}
		if plans := plansOf(res.Log); len(plans) != 1 || bRuns.Load() != 2 || len(p.Requests()) != 1 {
			t.Errorf("plans %q, b ran %d times, %d requests", plans, bRuns.Load(), len(p.Requests()))
		}
		sameLog(t, st, "d", res.Log)
	})
}

// TestResumeStopsWhenCancelled cancels a resume while it finishes the
// step its run was cut in: it starts no more calls, leaves those it did
// not finish unsettled, and a later resume finishes them.
func TestResumeStopsWhenCancelled(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	var aRuns, bRuns atomic.Int64
	bStarted := make(chan struct{})
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	reg.Activity("a", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		switch aRuns.Add(1) {
		case 1:
			<-bStarted
			cancel()
		case 2:
			cancel2() // Ctrl-C while the resume runs a again
		default:
			return agent.Value("a")
		}
		<-c.Done()
		return nil, c.Err()
	})))
	reg.Tool("b", json.RawMessage(`{"type":"object"}`))
	reg.Activity("b", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if bRuns.Add(1) == 1 {
			close(bStarted)
			<-c.Done()
			return nil, c.Err()
		}
		return agent.Value("b")
	})))
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "f", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","_outputPath":"†state.b"}],"output":null}`)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"},{"type":"text","text":"Go"}]`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	cfg.Provider = scripted.Solutions()
	cfg.Concurrency = 1 // a again, then b
	if _, err := agent.Resume(ctx2, cfg, "f"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled resume: %v", err)
	}
	if bRuns.Load() != 1 {
		t.Errorf("the cancelled resume started b")
	}
	cfg.Provider, cfg.Concurrency = scripted.Solutions(`{"calls":[],"output":"done"}`), 0
	res, err := agent.Resume(context.Background(), cfg, "f")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"a":"a","b":"b"}` || len(planErrors(res.Log)) != 0 {
		t.Errorf("state %s, errors %q", got, planErrors(res.Log))
	}
	sameLog(t, st, "f", res.Log)
}

// TestResumeStepNumbers cuts a run short at step 3 after a step with no
// calls: Resume goes on at step 3, counting every request made.
func TestResumeStepNumbers(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	reg.Activity("a", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return agent.Value("a") }))
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "s", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"a","_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[],"output":null}`,
	)}
	var steps []int
	for ev, err := range agent.Events(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"text","text":"Go"}]`)) {
		if err != nil {
			break
		}
		if ev.Kind == agent.EventStep {
			if steps = append(steps, ev.Step); ev.Step == 3 {
				cancel()
			}
		}
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"done"}`)
	for ev, err := range agent.ResumeEvents(context.Background(), cfg, "s") {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventStep {
			steps = append(steps, ev.Step)
		}
	}
	if !slices.Equal(steps, []int{1, 2, 3, 3}) {
		t.Errorf("steps %v, want 1 2 3 3", steps)
	}
}

// TestCancelAfterAnswer cancels a run once the model gave its output, with
// no call running: nothing was cut short, so the run ends with it.
func TestCancelAfterAnswer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := scripted.Solutions(`{"output":"done"}`)
	p := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			for ch, err := range answer.Generate(c, req) {
				if !yield(ch, err) {
					return
				}
			}
			cancel() // Ctrl-C as the answer arrives
		}
	})
	st := store.NewMemory()
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), Store: st, RunID: "c"}
	res, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"Go"}]`))
	if err != nil || string(res.Solution.Output) != `"done"` {
		t.Fatalf("run: %v", err)
	}
	if run, _ := st.Load(context.Background(), "c"); run.Status != store.Done {
		t.Errorf("status %s", run.Status)
	}
}

// TestDurableCutStepWithOutput cuts short a step that gave its output: the
// run did not end (it is interrupted, not done), and Resume ends the step
// from the journal, reporting the cut call and the call that failed once
// each, before the model is asked again.
func TestDurableCutStepWithOutput(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	badDone := make(chan struct{})
	reg.Tool("bad", json.RawMessage(`{"type":"object"}`))
	reg.Activity("bad", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		defer close(badDone)
		return nil, errors.New("no stock")
	}))
	reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
	reg.Activity("wait", agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		<-badDone
		return interrupt(c, cancel)
	}))
	msgs := ctxOf(t, `[{"type":"tool","tool":"bad"},{"type":"tool","tool":"wait"},{"type":"text","text":"Order"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "o", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"bad","_outputPath":"†state.b"},{"_tool":"wait","_outputPath":"†state.w"}],"output":"ordered"}`)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	if run, _ := st.Load(context.Background(), "o"); run.Status != store.Interrupted {
		t.Fatalf("status %s", run.Status)
	}
	p := scripted.Solutions(`{"calls":[],"output":"not ordered"}`)
	cfg.Provider = p
	res, err := agent.Resume(context.Background(), cfg, "o")
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || string(res.Solution.Output) != `"not ordered"` {
		t.Errorf("steps %d, output %s", res.Steps, res.Solution.Output)
	}
	errs := planErrors(res.Log)
	if len(errs) != 2 || !strings.Contains(errs[0]+errs[1], "no stock") || !strings.Contains(errs[0]+errs[1], "interrupted") {
		t.Errorf("errors %q", errs)
	}
	if reqs := p.Requests(); len(reqs) != 1 || !strings.Contains(fmt.Sprint(reqs[0].Messages), "no stock") {
		t.Error("the resumed request did not see the failed call")
	}
	sameLog(t, st, "o", res.Log)
}

// TestDurableCutStepKeepsNotice cuts short a step whose answer was invalid:
// the notice that tells the model so is not a call's error, so it stays in
// the journal and the resumed log has it once.
func TestDurableCutStepKeepsNotice(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
	reg.Activity("wait", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if ctx.Err() == nil {
			return interrupt(c, cancel)
		}
		return agent.Value("waited")
	})))
	msgs := ctxOf(t, `[{"type":"tool","tool":"wait"},{"type":"text","text":"Name it"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "n", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"wait","_outputPath":"†state.w"}],"output":5}`)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"five"}`)
	res, err := agent.Resume(context.Background(), cfg, "n")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"w":"waited"}` {
		t.Errorf("state %s", got)
	}
	if errs := planErrors(res.Log); len(errs) != 1 || strings.Contains(errs[0], "interrupted") {
		t.Errorf("errors %q, want the invalid answer's notice once", errs)
	}
	sameLog(t, st, "n", res.Log)
}

// TestDurableResumeBackgroundCall stops a run while a call an earlier step
// started in the background still runs: Resume reports it interrupted (or
// runs it again if idempotent), as it does the open step's calls, rather
// than forgetting it.
func TestDurableResumeBackgroundCall(t *testing.T) {
	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			reg := agent.NewRegistry()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var runs atomic.Int64
			step2 := make(chan struct{})
			var notify agent.Activity = agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
				if runs.Add(1) == 1 {
					<-step2
					return interrupt(c, cancel) // Ctrl-C while the background call runs
				}
				return agent.Value("notified")
			})
			if idempotent {
				notify = agent.Idempotent(notify)
			}
			reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
			reg.Activity("notify", notify)
			reg.Tool("look", json.RawMessage(`{"type":"object"}`))
			reg.Activity("look", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
				close(step2)
				return agent.Value("looked")
			}))
			msgs := ctxOf(t, `[{"type":"tool","tool":"notify"},{"type":"tool","tool":"look"},{"type":"text","text":"Go"}]`)
			st := store.NewMemory()
			cfg := agent.Config{Registry: reg, Store: st, RunID: "bg", Clock: fixedClock, Provider: scripted.Solutions(
				`{"calls":[{"_tool":"notify"}],"output":null}`, // in the background
				`{"calls":[{"_tool":"look","_outputPath":"†state.look"}],"output":null}`,
				`{"calls":[],"output":"never"}`,
			)}
			if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, context.Canceled) {
				t.Fatalf("cut run: %v", err)
			}
			p := scripted.Solutions(`{"calls":[],"output":"done"}`)
			cfg.Provider = p
			res, err := agent.Resume(context.Background(), cfg, "bg")
			if err != nil {
				t.Fatal(err)
			}
			errs := planErrors(res.Log)
			seen := fmt.Sprint(p.Requests()[0].Messages)
			if idempotent {
				if runs.Load() != 2 || len(errs) != 0 { // its result goes nowhere: no _outputPath
					t.Errorf("notify ran %d times; errors %q; the model saw %s", runs.Load(), errs, seen)
				}
			} else if runs.Load() != 1 || len(errs) != 1 || !strings.Contains(errs[0], "interrupted") || !strings.Contains(seen, "interrupted") {
				t.Errorf("notify ran %d times; errors %q; the model saw %s", runs.Load(), errs, seen)
			}
			sameLog(t, st, "bg", res.Log)
		})
	}
}

// TestDurableResumeBackgroundError crashes a run after a call an earlier
// step started in the background failed, and before its error message was
// written (it goes into the log with the next step's plan, and the
// settling of that step's last call): Resume restores the error message
// from the call's entry, and runs the last call again.
func TestDurableResumeBackgroundError(t *testing.T) {
	reg := agent.NewRegistry()
	step2, settled := make(chan struct{}), make(chan struct{})
	reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
	reg.Activity("notify", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		<-step2
		return nil, errors.New("mailbox full")
	}))
	var looks atomic.Int64
	reg.Tool("look", json.RawMessage(`{"type":"object"}`))
	reg.Activity("look", agent.Idempotent(agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		if looks.Add(1) == 1 {
			close(step2)
		}
		<-settled
		return agent.Value("looked")
	})))
	st := newCrashStore(1 << 40)
	st.written = func(e store.Entry) {
		if e.Type == store.EntrySettled && e.Call == "1.0" {
			close(settled)
		}
	}
	st.crashOn = func(e store.Entry) bool { // step 2's plan, with look's settling
		return e.Type == store.EntryMessage && strings.Contains(string(e.Data), `look`) && strings.Contains(string(e.Data), `"type":"plan"`)
	}
	msgs := ctxOf(t, `[{"type":"tool","tool":"notify"},{"type":"tool","tool":"look"},{"type":"text","text":"Go"}]`)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "bg", Clock: fixedClock, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"notify"}],"output":null}`, // in the background
		`{"calls":[{"_tool":"look","_outputPath":"†state.look"}],"output":null}`,
	)}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, errCrash) {
		t.Fatalf("crashed run: %v", err)
	}
	st2 := restart(t, st, "bg")
	p := scripted.Solutions(`{"calls":[],"output":"done"}`)
	cfg.Store, cfg.Provider = st2, p
	res, err := agent.Resume(context.Background(), cfg, "bg")
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); len(errs) != 1 || !strings.Contains(errs[0], "mailbox full") {
		t.Errorf("errors %q", errs)
	}
	if got := stateOf(t, res.Log); got != `{"look":"looked"}` {
		t.Errorf("state %s", got)
	}
	if n := looks.Load(); n != 2 {
		t.Errorf("look ran %d times, want 2: its settling was lost with the plan", n)
	}
	sameLog(t, st2, "bg", res.Log)
}

// TestResumeRunsWaitingCall cuts a step while one of its calls waits for
// what another, still running, is to write: the journal holds the waiting
// call from the moment the model wrote it, so the resume runs it (Confirm
// approving it first) once the other call, run again, wrote its data. The
// step's plan keeps the model's order, and the next request is the one
// the uninterrupted run sends.
func TestResumeRunsWaitingCall(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"put","v":"†state.s","_outputPath":"†state.x"},{"_tool":"slow","v":2,"_outputPath":"†state.s"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`)
	type outcome struct {
		req       provider.Request
		res       *agent.RunResult
		confirmed []string // the tools Confirm approved after the cut
	}
	run := func(cut bool) outcome {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var cutNow atomic.Bool
		cutNow.Store(cut)
		reg := echoReg()
		reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
		reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
			if cutNow.Swap(false) {
				return interrupt(c, cancel)
			}
			return agent.Value("slow done")
		})))
		var mu sync.Mutex
		var confirmed []string
		st := store.NewMemory()
		p := scripted.Solutions(answers...)
		cfg := agent.Config{Registry: reg, Concurrency: 4, Clock: fixed, Store: st, RunID: "w", Provider: p,
			Confirm: func(_ context.Context, c *agent.Call) (agent.Decision, error) {
				mu.Lock()
				defer mu.Unlock()
				confirmed = append(confirmed, c.Tool)
				return agent.Decision{}, nil
			}}
		res, err := agent.Run(ctx, cfg, anyOut, msgs)
		if !cut {
			if err != nil {
				t.Fatal(err)
			}
			return outcome{p.Requests()[1], res, confirmed}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		if slices.Contains(confirmed, "put") {
			t.Fatalf("put ran before the cut: it was to wait for slow")
		}
		confirmed = nil
		rest := scripted.Solutions(answers[1:]...)
		cfg.Provider, cfg.RunID = rest, ""
		res, err = agent.Resume(context.Background(), cfg, "w")
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		sameLog(t, st, "w", res.Log)
		return outcome{rest.Requests()[0], res, confirmed}
	}
	want, got := run(false), run(true)
	if s := stateOf(t, got.res.Log); s != `{"s":"slow done","x":"slow done"}` {
		t.Errorf("resumed state %s", s)
	}
	if p, w := plansOf(got.res.Log), plansOf(want.res.Log); !slices.Equal(p, w) {
		t.Errorf("resumed plans %q, want %q", p, w)
	}
	if !slices.Contains(got.confirmed, "put") {
		t.Errorf("the resume ran put without asking Confirm (asked for %q)", got.confirmed)
	}
	if a, b := fmt.Sprint(want.req.Messages), fmt.Sprint(got.req.Messages); a != b {
		t.Errorf("the resumed run's request differs from the uninterrupted one's:\n%s\nwant\n%s", b, a)
	}
}

// TestResumeWeighsWaitingCallByAdvice cuts a step whose advisors voted
// against deploy while deploy waits for what delay is to write: the
// journal holds the step's advice, so the resume vetoes deploy as the
// uninterrupted run does, rather than run it.
func TestResumeWeighsWaitingCallByAdvice(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := agent.NewRegistry()
	var mu sync.Mutex
	var ran []string
	var delays atomic.Int64
	for _, n := range []string{"deploy", "delay"} {
		reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		reg.Activity(n, agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
			if n == "delay" && delays.Add(1) == 1 {
				return interrupt(c, cancel)
			}
			mu.Lock()
			ran = append(ran, n)
			mu.Unlock()
			return agent.Value(n + "ed")
		})))
	}
	msgs := ctxOf(t, `[{"type":"tool","tool":"deploy"},{"type":"tool","tool":"delay"},`+riskAnalyst+`,{"type":"text","text":"Ship?"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "v", Clock: fixedClock, Provider: scripted.Solutions(
		`{` + riskVotes + `,"calls":[{"_tool":"deploy","after":"†state.d","_outputPath":"†state.x"},{"_tool":"delay","_outputPath":"†state.d"}],"output":null}`)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut run: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"advisors":[],"calls":[],"output":"done"}`)
	res, err := agent.Resume(context.Background(), cfg, "v")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"delay"}) {
		t.Errorf("ran %v, want delay only", ran)
	}
	if errs := planErrors(res.Log); len(errs) != 1 || !strings.Contains(errs[0], "the advisors voted against deploy") {
		t.Errorf("errors %q", errs)
	}
	if len(res.Advice) == 0 {
		t.Errorf("the resumed run lost the step's advice")
	}
	sameLog(t, st, "v", res.Log)
}

// TestForkRunsCallsAfterItsMessage forks a finished run at the message
// the first call of a step wrote, while the second call, which read it,
// had not settled: in the fork that call has not run yet, and resuming
// the fork runs it and ends the step with both calls in its plan.
func TestForkRunsCallsAfterItsMessage(t *testing.T) {
	reg := echoReg()
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"sys"},{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":"†state.a","_outputPath":"†state.b"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "parent", Clock: fixed, Provider: scripted.Solutions(answers...)}
	parent, err := agent.Run(context.Background(), cfg, anyOut, msgs)
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(parent.Log.Messages(), func(m message.Message) bool { return m.Type == message.TypeData && m.Kind == "state" })
	if _, err := store.Fork(context.Background(), st, st, "parent", at, "fork", fixed()); err != nil {
		t.Fatal(err)
	}
	cfg.Provider = scripted.Solutions(answers[1:]...)
	res, err := agent.Resume(context.Background(), cfg, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"a":1,"b":1}` {
		t.Errorf("the fork's state %s", got)
	}
	if got, want := plansOf(res.Log), plansOf(parent.Log); !slices.Equal(got, want) {
		t.Errorf("the fork's plans %q, want %q", got, want)
	}
	sameLog(t, st, "fork", res.Log)
}
