package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// TestDurableProviderErrorKeepsFinishedCall: the model's stream fails
// after a call it wrote has run to its end. The call's output was
// produced: the journal keeps it, and a resume neither reports the call
// interrupted nor runs it again.
func TestDurableProviderErrorKeepsFinishedCall(t *testing.T) {
	reg := agent.NewRegistry()
	var runs atomic.Int64
	paid := make(chan struct{})
	reg.Tool("pay", json.RawMessage(`{"type":"object"}`))
	reg.Activity("pay", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		if runs.Add(1) == 1 {
			defer close(paid)
		}
		return agent.Value("paid")
	}))
	errOverloaded := errors.New("overloaded")
	failing := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			if !yield(&provider.Chunk{Text: `{"calls":[{"_tool":"pay","_outputPath":"†state.receipt"},`}, nil) {
				return
			}
			<-paid // the call ran to its end
			yield(nil, errOverloaded)
		}
	})
	msgs := ctxOf(t, `[{"type":"tool","tool":"pay"},{"type":"text","text":"Pay"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "p", Provider: failing, Clock: fixedClock}
	_, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs)
	if !errors.Is(err, errOverloaded) {
		t.Fatalf("run: %v", err)
	}
	settled := false
	for _, e := range journal(t, st, "p") {
		settled = settled || e.Type == store.EntrySettled && e.Call == "1.0"
	}
	if !settled {
		t.Errorf("the call ran to its end, but the journal does not keep it:\n%s", strings.Join(journalLog(t, journal(t, st, "p")), "\n"))
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"†state.receipt"}`)
	res, err := agent.Resume(context.Background(), cfg, "p")
	if err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("pay ran %d times", n)
	}
	if errs := planErrors(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	if got := stateOf(t, res.Log); got != `{"receipt":"paid"}` {
		t.Errorf("state %s", got)
	}
}

// TestDurableProviderErrorKeepsBackgroundCall: a fire-and-forget call of
// step 1 ran to its end while step 2's request failed. The journal keeps
// it settled, so a resume does not report it interrupted.
func TestDurableProviderErrorKeepsBackgroundCall(t *testing.T) {
	reg := agent.NewRegistry()
	var runs atomic.Int64
	sent := make(chan struct{})
	reg.Tool("notify", json.RawMessage(`{"type":"object"}`))
	reg.Activity("notify", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		if runs.Add(1) == 1 {
			defer close(sent)
		}
		return agent.Value("sent")
	}))
	errOverloaded := errors.New("overloaded")
	step1 := scripted.Solutions(`{"calls":[{"_tool":"notify"}],"output":null}`)
	n := 0
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if n++; n == 1 {
			return step1.Generate(ctx, req)
		}
		return func(yield func(*provider.Chunk, error) bool) {
			<-sent
			yield(nil, errOverloaded)
		}
	})
	msgs := ctxOf(t, `[{"type":"tool","tool":"notify"},{"type":"text","text":"Tell them"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "n", Provider: p, Clock: fixedClock}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, errOverloaded) {
		t.Fatalf("run: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":"told"}`)
	res, err := agent.Resume(context.Background(), cfg, "n")
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); len(errs) != 0 || runs.Load() != 1 {
		t.Errorf("notify ran %d times; errors %q", runs.Load(), errs)
	}
	sameLog(t, st, "n", res.Log)
}
