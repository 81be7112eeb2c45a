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

// failingAppends is a store whose Appends fail, once failAt of them went
// through, until the store is healed: a database that went away.
type failingAppends struct {
	runStore
	appends, failAt atomic.Int64
	healed          atomic.Bool
}

var errStoreGone = errors.New("connection reset by peer")

func (s *failingAppends) Append(ctx context.Context, id string, lease store.Lease, es ...store.Entry) error {
	if s.appends.Add(1) > s.failAt.Load() && !s.healed.Load() {
		return errStoreGone
	}
	return s.runStore.Append(ctx, id, lease, es...)
}

// Save with entries is a journal write, failing as an Append does.
func (s *failingAppends) Save(ctx context.Context, owner string, run store.Run, es ...store.Entry) error {
	if len(es) > 0 && s.appends.Add(1) > s.failAt.Load() && !s.healed.Load() {
		return errStoreGone
	}
	return s.runStore.Save(ctx, owner, run, es...)
}

// TestDurableAppendFails: whichever journal write fails, the run returns
// its error, is saved as stopped and gives its lease up (it renewed the
// lease for ever, holding the run, after some of them), and a resume once
// the store is back finishes it.
func TestDurableAppendFails(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	answers := []string{nCalls(3, false), nCalls(3, false), `{"calls":[],"output":{"done":true}}`}
	for failAt := range int64(8) {
		reg, msgs := tenTools()
		mem := store.NewMemory()
		st := &failingAppends{runStore: mem}
		st.failAt.Store(failAt)
		r := &replay{answers: answers}
		cfg := agent.Config{Provider: r.provider(), Registry: reg, Store: st, RunID: "r"}
		_, err := agent.Run(t.Context(), cfg, schema, msgs)
		if st.appends.Load() <= failAt {
			break // the run made fewer writes
		}
		if !errors.Is(err, errStoreGone) {
			t.Fatalf("failAt=%d: the run whose journal write failed: %v", failAt, err)
		}
		run, lerr := mem.Load(t.Context(), "r")
		if lerr != nil || run.Status == store.Running || run.Lease.Owner != "" {
			t.Errorf("failAt=%d: after the run: %+v, %v", failAt, run, lerr)
		}
		st.healed.Store(true)
		res, err := agent.Resume(t.Context(), agent.Config{Provider: (&replay{answers: answers[2:]}).provider(), Registry: reg, Store: st}, "r")
		if err != nil || string(res.Solution.Output) != `{"done":true}` {
			t.Errorf("failAt=%d: resume: %v, %v", failAt, res, err)
		}
	}
}
