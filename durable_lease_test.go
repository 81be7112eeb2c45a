package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
	"github.com/augceo/agent/store/sqlite"
)

// runStore is what Resume needs of a store.
type runStore interface {
	store.Store
	store.Catalog
}

// forEachStore runs f with a new store of each backend: memory, SQLite,
// and PostgreSQL (skipped unless ACTS_TEST_POSTGRES names a server, and
// required under CI).
func forEachStore(t *testing.T, f func(t *testing.T, st runStore)) {
	t.Run("memory", func(t *testing.T) { f(t, store.NewMemory()) })
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

// stepUsage is what each scripted answer of these tests costs.
var stepUsage = provider.Usage{Input: 10, Output: 8}

func costly(text string) scripted.Response {
	return scripted.Response{Solutions: []string{text}, Usage: stepUsage}
}

// blocking registers tool "slow", whose calls wait for release, and
// "a" from counted.
func blocking(reg *agent.Registry) (started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 8), make(chan struct{})
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return agent.Value("slept")
	}))
	return started, release
}

func TestDurableRunIDTaken(t *testing.T) { forEachStore(t, testDurableRunIDTaken) }

func testDurableRunIDTaken(t *testing.T, st runStore) {
	cfg := agent.Config{Provider: scripted.New(costly(`{"output":1}`), costly(`{"output":2}`)), Store: st, RunID: "x"}
	if _, err := agent.Run(t.Context(), cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"text","text":"hi"}]`)); err != nil {
		t.Fatal(err)
	}
	_, err := agent.Run(t.Context(), cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"text","text":"again"}]`))
	if !errors.Is(err, store.ErrExists) || !strings.Contains(err.Error(), "resume it") {
		t.Fatalf("a second run with the id: %v", err)
	}
	if n := len(journal(t, st, "x")); n != 3 { // its context, usage, end
		t.Errorf("the first run's journal has %d entries after the second tried", n)
	}
}

func TestDurableRunIDRace(t *testing.T) { forEachStore(t, testDurableRunIDRace) }

// Runs racing for one id: one runs, the others fail before calling the
// model.
func testDurableRunIDRace(t *testing.T, st runStore) {
	var wins, exists atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			p := scripted.New(costly(`{"output":1}`))
			_, err := agent.Run(context.Background(), agent.Config{Provider: p, Store: st, RunID: "same"}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"text","text":"hi"}]`))
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrExists):
				if len(p.Requests()) != 0 {
					t.Error("a run that lost the race called the model")
				}
				exists.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != 7 {
		t.Fatalf("%d won, %d found the id taken", wins.Load(), exists.Load())
	}
	ends := 0
	for _, e := range journal(t, st, "same") {
		if e.Type == store.EntryEnd {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d end entries", ends)
	}
}

func TestDurableResumeHeld(t *testing.T) { forEachStore(t, testDurableResumeHeld) }

// While a run is advanced by its owner, a resume of it fails at once,
// naming the owner and when its lease expires, and calls nothing.
func testDurableResumeHeld(t *testing.T, st runStore) {
	reg := agent.NewRegistry()
	started, release := blocking(reg)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "held"}
	done := make(chan error, 1)
	go func() {
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`))
		done <- err
	}()
	<-started
	run, err := st.Load(t.Context(), "held")
	if err != nil || run.Lease.Owner == "" || run.Status != store.Running {
		t.Fatalf("the running run: %+v, %v", run, err)
	}
	_, err = agent.Resume(t.Context(), cfg, "held")
	var le *store.LeaseError
	if !errors.As(err, &le) || le.Held.Owner != run.Lease.Owner || !strings.Contains(err.Error(), run.Lease.Owner) {
		t.Fatalf("resume of a held run: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if run, _ := st.Load(t.Context(), "held"); run.Lease.Owner != "" || run.Status != store.Done {
		t.Errorf("after the run: %+v", run)
	}
	// A resume of the finished run now gets its result, runs nothing.
	if len(started) != 0 {
		t.Fatal("slow ran twice")
	}
	res, err := agent.Resume(t.Context(), cfg, "held")
	if err != nil || stateOf(t, res.Log) != `{"s":"slept"}` || len(started) != 0 {
		t.Errorf("resume of the done run: %v, %v", res, err)
	}
}

func TestDurableConcurrentResumes(t *testing.T) {
	// A crashed run resumed by several at once: one takes it and runs its
	// remaining calls once; the others fail naming it.
	plan, msgs := chainPlan(t, 3)
	reg := agent.NewRegistry()
	counted(reg)
	st := newCrashStore(4)
	if _, err := agent.ExecutePlanInstances(t.Context(), agent.Config{Registry: reg, Store: st, RunID: "r", Concurrency: 1}, plan, msgs); !errors.Is(err, errCrash) {
		t.Fatalf("crash: %v", err)
	}
	st2 := restart(t, st, "r")
	reg2 := agent.NewRegistry()
	runs := counted(reg2)
	var wg sync.WaitGroup
	var ok, held atomic.Int64
	for range 6 {
		wg.Go(func() {
			_, err := agent.Resume(context.Background(), agent.Config{Registry: reg2, Store: st2}, "r")
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrLeased):
				held.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The one that took it finished before some of the others tried:
	// those found it done. Every call settled exactly once.
	if ok.Load() < 1 || ok.Load()+held.Load() != 6 {
		t.Errorf("%d resumed, %d found it held", ok.Load(), held.Load())
	}
	settled, ends := map[string]int{}, 0
	for _, e := range journal(t, st, "r") {
		switch e.Type {
		case store.EntrySettled:
			settled[e.Call]++
		case store.EntryEnd:
			ends++
		}
	}
	for call, n := range settled {
		if n != 1 {
			t.Errorf("call %s settled %d times", call, n)
		}
	}
	if len(settled) != 9 || ends != 1 {
		t.Errorf("%d calls settled, %d ends", len(settled), ends)
	}
	runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n > 1 {
			t.Errorf("%s ran %d times after the crash", k, n)
		}
		return true
	})
}

func TestDurableLeaseLost(t *testing.T) { forEachStore(t, testDurableLeaseLost) }

// A holder that stalled past its lease while another took the run over
// can no longer write it: its run stops, saying so.
func testDurableLeaseLost(t *testing.T, st runStore) {
	reg := agent.NewRegistry()
	started, release := blocking(reg)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "stolen"}
	done := make(chan error, 1)
	go func() {
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`))
		done <- err
	}()
	<-started
	run, _ := st.Load(t.Context(), "stolen")
	if err := st.Acquire(t.Context(), "stolen", store.Lease{Owner: "thief", Expires: run.Lease.Expires.Add(time.Hour)}, run.Lease.Expires); err != nil {
		t.Fatal(err)
	}
	close(release)
	err := <-done
	if !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), "thief") {
		t.Fatalf("the holder that lost its lease: %v", err)
	}
	for _, e := range journal(t, st, "stolen") {
		if e.Type == store.EntrySettled {
			t.Error("a holder that lost its lease wrote the journal")
		}
	}
}

func TestDurableLeaseRenewed(t *testing.T) {
	// A call that runs for many lease periods keeps the run held: the
	// lease is renewed while the run works, and given up at its end.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		reg.Activity("long", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			time.Sleep(time.Minute)
			return agent.Value("done")
		}))
		st := store.NewMemory()
		cfg := agent.Config{Registry: reg, Store: st, RunID: "long", LeaseTTL: 3 * time.Second}
		done := make(chan error, 1)
		go func() {
			_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"long","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"long"}]`))
			done <- err
		}()
		time.Sleep(30 * time.Second)
		err := st.Acquire(context.Background(), "long", store.Lease{Owner: "other", Expires: time.Now().Add(time.Minute)}, time.Now())
		if !errors.Is(err, store.ErrLeased) {
			t.Fatalf("half a minute in (ten lease periods), another took the run: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if run, _ := st.Load(context.Background(), "long"); run.Lease.Owner != "" || run.Status != store.Done {
			t.Errorf("after the run: %+v", run)
		}
	})
}

// countedRenewals is a store that counts the Acquires made through it,
// and the Appends, those that renew the lease among them.
type countedRenewals struct {
	store.Store
	acquires, appends, renewing atomic.Int64
}

func (s *countedRenewals) Append(ctx context.Context, id string, l store.Lease, es ...store.Entry) error {
	s.appends.Add(1)
	if !l.Expires.IsZero() {
		s.renewing.Add(1)
	}
	return s.Store.Append(ctx, id, l, es...)
}

func (s *countedRenewals) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, id, l, now)
}

func TestDurableLeaseRenewedByWrites(t *testing.T) {
	// A run that writes its journal more often than its lease's renewal
	// period renews the lease by those writes alone: each carries the
	// lease on, so the run needs no Acquire of its own, and another
	// process still cannot take the run while it works.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("step", json.RawMessage(`{"type":"object"}`))
		reg.Activity("step", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			time.Sleep(400 * time.Millisecond) // a journal write each 0.4 s, a lease period each 1 s
			return agent.Value("done")
		}))
		const calls = 25 // 10 s, ten lease periods
		plan := []string{`{"_tool":"step","_outputPath":"†state.s0"}`}
		for i := 1; i < calls; i++ {
			plan = append(plan, fmt.Sprintf(`{"_tool":"step","after":"†state.s%d","_outputPath":"†state.s%d"}`, i-1, i))
		}
		mem := store.NewMemory()
		st := &countedRenewals{Store: mem}
		cfg := agent.Config{Registry: reg, Store: st, RunID: "busy", LeaseTTL: 3 * time.Second}
		done := make(chan error, 1)
		go func() {
			_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, "["+strings.Join(plan, ",")+"]"), planCtx(t, `[{"type":"tool","tool":"step"}]`))
			done <- err
		}()
		time.Sleep(7*time.Second + 100*time.Millisecond)
		err := mem.Acquire(context.Background(), "busy", store.Lease{Owner: "other", Expires: time.Now().Add(time.Minute)}, time.Now())
		if !errors.Is(err, store.ErrLeased) {
			t.Fatalf("seven lease periods in, another took the run: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := st.acquires.Load(); n != 0 {
			t.Errorf("the run renewed its lease %d times; want none: its writes renew it", n)
		}
		// The first Append of each of the ten periods renews the lease;
		// the others leave it.
		if n, all := st.renewing.Load(), st.appends.Load(); n == 0 || n > 10 {
			t.Errorf("%d of the run's %d Appends renewed the lease; want one a period, at most 10", n, all)
		}
		if run, _ := mem.Load(context.Background(), "busy"); run.Lease.Owner != "" || run.Status != store.Done {
			t.Errorf("after the run: %+v", run)
		}
	})
}

// hangingRenewals is a store whose Acquire, once the run is created, waits
// until its ctx is done: a database that stopped answering.
type hangingRenewals struct{ store.Store }

func (s hangingRenewals) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestDurableLeaseRenewalHangs(t *testing.T) {
	// A renewal that does not come back before the lease expires loses
	// the lease: another process may take the run over from then on, so
	// the run stops, its calls cancelled, rather than going on beside it.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		reg.Activity("long", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			select {
			case <-time.After(time.Hour):
				return agent.Value("done")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		mem := store.NewMemory()
		cfg := agent.Config{Registry: reg, Store: hangingRenewals{mem}, RunID: "long", LeaseTTL: 3 * time.Second}
		start := time.Now()
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"long","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"long"}]`))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lost its lease") {
			t.Fatalf("the run whose renewals hang: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the run went on %v, past its lease of 3s", d)
		}
		if run, _ := mem.Load(context.Background(), "long"); run.Status != store.Interrupted {
			t.Errorf("the run is %s, want it interrupted", run.Status)
		}
	})
}

func TestDurableLeaseExpiredNotRenewed(t *testing.T) {
	// The machine slept past the run's lease (its clock jumped), and
	// meanwhile another process took the run over and finished it. The
	// run that wakes does not renew the lease it lost, which the other
	// left free, and does not write the journal that ended.
	synctest.Test(t, func(t *testing.T) {
		reg, release := agent.NewRegistry(), make(chan struct{})
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		reg.Activity("long", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			<-release
			return agent.Value("done")
		}))
		var slept atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(slept.Load())) }
		st := store.NewMemory()
		cfg := agent.Config{Registry: reg, Store: st, RunID: "slept", LeaseTTL: 3 * time.Second, Clock: clock}
		done := make(chan error, 1)
		go func() {
			_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"long","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"long"}]`))
			done <- err
		}()
		synctest.Wait()
		slept.Store(int64(time.Hour))
		run, _ := st.Load(context.Background(), "slept")
		if err := st.Acquire(context.Background(), "slept", store.Lease{Owner: "other", Expires: clock().Add(time.Minute)}, clock()); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(context.Background(), "slept", store.Lease{Owner: "other"}, store.Entry{Type: store.EntryEnd, Time: clock()}); err != nil {
			t.Fatal(err)
		}
		run.Status, run.Lease = store.Done, store.Lease{}
		if err := st.Save(context.Background(), "other", run); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the run's next renewal
		close(release)
		if err := <-done; err == nil {
			t.Error("the run that slept past its lease ended as if it held it")
		}
		es := journal(t, st, "slept")
		for i, e := range es {
			if e.Type == store.EntryEnd && i != len(es)-1 {
				t.Errorf("the journal goes on for %d entries after its end", len(es)-1-i)
				break
			}
		}
	})
}

func TestDurableResumeRenewedWhileFinishing(t *testing.T) {
	// A resumed loop first finishes the step it stopped in. A call it runs
	// again there keeps the run held for as long as it runs, before the
	// resumed loop's journal takes the run over.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var runs atomic.Int64
		reg.Activity("long", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
			if runs.Add(1) == 1 {
				return interrupt(c, cancel) // the first attempt is interrupted
			}
			time.Sleep(time.Minute)
			return agent.Value("done")
		})))
		st := store.NewMemory()
		cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[{"_tool":"long","_outputPath":"†state.s"}],"output":null}`),
			Registry: reg, Store: st, RunID: "long", LeaseTTL: 3 * time.Second}
		msgs := ctxOf(t, `[{"type":"tool","tool":"long"}]`)
		if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		// The step did not end: its plan is not in the journal, so the
		// resume ends the step, running the idempotent call again.
		for _, e := range journal(t, st, "long") {
			if e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"type":"plan"`) {
				t.Errorf("the interrupted step's plan is in the journal: %s", e.Data)
			}
		}
		cfg.Provider = scripted.Solutions(`{"calls":[],"output":"†state.s"}`)
		done := make(chan *agent.RunResult, 1)
		go func() {
			res, err := agent.Resume(context.Background(), cfg, "long")
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		time.Sleep(30 * time.Second)
		err := st.Acquire(context.Background(), "long", store.Lease{Owner: "other", Expires: time.Now().Add(time.Minute)}, time.Now())
		if !errors.Is(err, store.ErrLeased) {
			t.Fatalf("half a minute into the resumed call (ten lease periods), another took the run: %v", err)
		}
		if res := <-done; res == nil || stateOf(t, res.Log) != `{"s":"done"}` {
			t.Fatalf("resumed run: %+v", res)
		}
		if run, _ := st.Load(context.Background(), "long"); run.Lease.Owner != "" || run.Status != store.Done {
			t.Errorf("after the run: %+v", run)
		}
		if runs.Load() != 2 {
			t.Errorf("long ran %d times", runs.Load())
		}
	})
}

// TestDurableResumeLeaseLostWhileFinishing loses the lease while a resume
// finishes the step its run stopped in: the call is cancelled, and the
// resume's error says why, not only that a context was cancelled.
func TestDurableResumeLeaseLostWhileFinishing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{})
		var runs atomic.Int64
		reg.Activity("long", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
			if runs.Add(1) == 1 {
				cancel() // the first attempt is interrupted
			} else {
				close(started)
			}
			<-c.Done()
			return nil, c.Err()
		})))
		st := store.NewMemory()
		cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[{"_tool":"long","_outputPath":"†state.s"}],"output":null}`),
			Registry: reg, Store: st, RunID: "long", LeaseTTL: 3 * time.Second}
		if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"long"}]`)); !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run: %v", err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := agent.Resume(context.Background(), cfg, "long")
			done <- err
		}()
		<-started
		run, _ := st.Load(context.Background(), "long")
		if err := st.Acquire(context.Background(), "long", store.Lease{Owner: "thief", Expires: run.Lease.Expires.Add(time.Hour)}, run.Lease.Expires); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), "thief") {
			t.Fatalf("the resume that lost its lease: %v", err)
		}
		if run, _ := st.Load(context.Background(), "long"); run.Lease.Owner != "thief" {
			t.Errorf("the lease after the failed resume: %+v", run.Lease)
		}
	})
}

func TestDurableResumeFailsEarly(t *testing.T) { forEachStore(t, testDurableResumeFailsEarly) }

// A resume that fails before it goes on (here finishing the interrupted
// step needs a tool its registry lacks) gives the run back at once, as it
// found it: a resume with the right registry can take it straight away
// rather than when the failed one's lease expires.
func testDurableResumeFailsEarly(t *testing.T, st runStore) {
	reg := agent.NewRegistry()
	var runs sync.Map
	for _, name := range []string{"a", "b"} {
		reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
		reg.Activity(name, countRuns(&runs, name, agent.Bind(func(ctx context.Context, p struct {
			V int `json:"v"`
		}) (map[string]int, error) {
			return map[string]int{"v": p.V + 1}, nil
		})))
	}
	msgs := ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"c"},{"type":"input","data":{"v":1}}]`)
	step1 := `{"calls":[{"_tool":"a","v":"†input.v","_outputPath":"†state.a"},{"_tool":"c","v":"†state.a.v","_outputPath":"†state.c"}],"output":null}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.Tool("c", json.RawMessage(`{"type":"object"}`))
	reg.Activity("c", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		return interrupt(c, cancel) // c is interrupted
	})))
	cfg := agent.Config{Provider: scripted.Solutions(step1), Registry: reg, Store: st, RunID: "early"}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	before, err := st.Load(t.Context(), "early")
	if err != nil || before.Status != store.Interrupted {
		t.Fatalf("the interrupted run: %+v, %v", before, err)
	}
	entries := len(journal(t, st, "early"))

	p := scripted.Solutions(`{"calls":[],"output":"†state.c"}`)
	cfg = agent.Config{Provider: p, Registry: agent.NewRegistry(), Store: st}
	if _, err := agent.Resume(t.Context(), cfg, "early"); !errors.Is(err, agent.ErrMissingActivity) || !errors.Is(err, agent.ErrRefused) || !strings.HasSuffix(err.Error(), ": a, c") {
		t.Fatalf("resume without the run's tools: %v", err)
	}
	after, err := st.Load(t.Context(), "early")
	if err != nil || after.Lease.Owner != "" || after.Status != store.Interrupted || after.Error != before.Error {
		t.Errorf("the run after a failed resume: %+v, %v", after, err)
	}
	if n := len(journal(t, st, "early")); n != entries || len(p.Requests()) != 0 {
		t.Errorf("a failed resume wrote %d entries and asked the model %d times", n-entries, len(p.Requests()))
	}

	reg2 := agent.NewRegistry()
	counted(reg2)
	cfg.Registry = reg2
	res, err := agent.Resume(t.Context(), cfg, "early")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"a":{"v":2},"c":{"v":3}}` {
		t.Errorf("state %s", got)
	}
	if n, _ := runs.Load("a/"); n.(*atomic.Int64).Load() != 1 {
		t.Errorf("a ran %d times", n.(*atomic.Int64).Load())
	}
}

func TestDurableResumePlanFailsEarly(t *testing.T) {
	forEachStore(t, testDurableResumePlanFailsEarly)
}

// A plan's resume that cannot run the plan (a program without the plan's
// activities: acts resume of a run that examples/orders made) gives the
// run back as it found it, as a loop's does: not failed, its journal as
// it was, and no one holding it.
func testDurableResumePlanFailsEarly(t *testing.T, st runStore) {
	reg := agent.NewRegistry()
	plan, msgs := chainPlan(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, name := range []string{"a", "b", "c"} {
		reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
		reg.Activity(name, agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
			if name == "b" {
				return interrupt(c, cancel)
			}
			return agent.Value(map[string]int{"v": 1})
		}))
	}
	cfg := agent.Config{Registry: reg, Store: st, RunID: "early"}
	if _, err := agent.ExecutePlanInstances(ctx, cfg, plan, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	before, err := st.Load(t.Context(), "early")
	if err != nil || before.Status != store.Interrupted {
		t.Fatalf("the interrupted run: %+v, %v", before, err)
	}
	entries := len(journal(t, st, "early"))

	cfg = agent.Config{Registry: agent.NewRegistry(), Store: st}
	if _, err := agent.Resume(t.Context(), cfg, "early"); !errors.Is(err, agent.ErrMissingActivity) || !errors.Is(err, agent.ErrRefused) || !strings.HasSuffix(err.Error(), ": a, b, c") {
		t.Fatalf("resume without the run's tools: %v", err)
	}
	after, err := st.Load(t.Context(), "early")
	if err != nil || after.Lease.Owner != "" || after.Status != store.Interrupted || after.Error != before.Error {
		t.Errorf("the run after a failed resume: %s %q, held by %q (%v)", after.Status, after.Error, after.Lease.Owner, err)
	}
	if n := len(journal(t, st, "early")); n != entries {
		t.Errorf("a failed resume wrote %d entries", n-entries)
	}
}

func TestDurableUsageExact(t *testing.T) { forEachStore(t, testDurableUsageExact) }

// A run whose second request fails, resumed, reports the usage of the
// same run uninterrupted; an invalid answer's usage counts too.
func testDurableUsageExact(t *testing.T, st runStore) {
	reg := agent.NewRegistry()
	counted(reg)
	msgs := ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"input","data":{"v":1}}]`)
	step1 := costly(`{"calls":[{"_tool":"a","v":"†input.v","_outputPath":"†state.a"}],"output":null}`)
	invalid := costly(`{"calls":[],"output":"not a number"}`)
	final := costly(`{"calls":[],"output":2}`)
	schema := json.RawMessage(`{"type":"integer"}`)

	whole, err := agent.Run(t.Context(), agent.Config{Provider: scripted.New(step1, invalid, final), Registry: reg, Store: st, RunID: "w"}, schema, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Usage != (provider.Usage{Input: 30, Output: 24}) {
		t.Fatalf("uninterrupted usage %+v: the invalid answer must count", whole.Usage)
	}

	failing := scripted.New(step1, invalid, scripted.Response{Err: errors.New("overloaded")})
	if _, err := agent.Run(t.Context(), agent.Config{Provider: failing, Registry: reg, Store: st, RunID: "f"}, schema, msgs); err == nil {
		t.Fatal("the failing run did not fail")
	}
	res, err := agent.Resume(t.Context(), agent.Config{Provider: scripted.New(final), Registry: reg, Store: st}, "f")
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != whole.Usage {
		t.Errorf("resumed usage %+v, uninterrupted %+v", res.Usage, whole.Usage)
	}
	if run, _ := st.Load(t.Context(), "f"); run.Usage != whole.Usage {
		t.Errorf("saved usage %+v", run.Usage)
	}
	// The budget counts what the first attempt spent: its 36 tokens
	// reach a budget of 36, which stops the resume before any request.
	st3 := st
	if _, err := agent.Run(t.Context(), agent.Config{Provider: scripted.New(step1, invalid, scripted.Response{Err: errors.New("overloaded")}), Registry: reg, Store: st3, RunID: "b"}, schema, msgs); err == nil {
		t.Fatal("no failure")
	}
	p := scripted.New(final)
	if _, err := agent.Resume(t.Context(), agent.Config{Provider: p, Registry: reg, Store: st3, TokenBudget: 36}, "b"); !errors.Is(err, agent.ErrTokenBudget) || len(p.Requests()) != 0 {
		t.Errorf("budget across a resume: %v, %d requests", err, len(p.Requests()))
	}
}

func TestDurableDoneResult(t *testing.T) {
	// A finished run keeps its result: Resume returns the solution, stepUsage
	// and advice without calling anything.
	st := store.NewMemory()
	ctx := ctxOf(t, `[{"type":"advisor","id":"critic","on":"request","role":"Judges."}]`)
	sol := `{"advisors":[{"id":"critic","calls":"{\"x\":1}"}],"output":{"answer":42}}`
	servers := []agent.MCPServer{{Name: "git", Command: []string{"mcp-server-git", "--repository", "."}, Env: []string{"GIT_DIR=.git"}, Prefix: "git_"}, {URL: "https://example.com/mcp"}}
	first, err := agent.Run(t.Context(), agent.Config{Provider: scripted.New(costly(sol)), Store: st, RunID: "d", Temperature: new(0.25), MaxTokens: 900, MCP: servers}, json.RawMessage(`{"type":"object"}`), ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New()
	res, err := agent.Resume(t.Context(), agent.Config{Provider: p, Store: st}, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Requests()) != 0 || res.Solution == nil || string(res.Solution.Output) != `{"answer":42}` || res.Usage != first.Usage ||
		len(res.Advice) != 1 || res.Advice[0].Votes["x"] != 1 || res.Steps != 1 {
		t.Fatalf("resumed done run: %+v (solution %+v)", res, res.Solution)
	}
	run, _ := st.Load(t.Context(), "d")
	saved, err := agent.SavedSettings(run)
	if err != nil || saved == nil || *saved.Temperature != 0.25 || saved.MaxTokens != 900 {
		t.Errorf("settings %+v, %v", saved, err)
	}
	// The MCP servers are saved as given, for a program that resumes the
	// run to connect them again.
	if diff := cmp.Diff(saved.MCP, servers); diff != "" {
		t.Errorf("saved MCP servers (-got +want):\n%s", diff)
	}
}

func TestDurableUsageAcrossCrash(t *testing.T) {
	// A run killed at one of its journal writes, resumed, reports the
	// usage of the same run uninterrupted once its first step's usage
	// was journaled. The crash falls on the write that holds step 1's
	// usage, its call's settling, its plan (which may be one write, or
	// two, as the call settled before the answer ended or after), or
	// the run's end, which holds the last step's usage too.
	reg := agent.NewRegistry()
	counted(reg)
	msgs := ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"input","data":{"v":1}}]`)
	step1 := costly(`{"calls":[{"_tool":"a","v":"†input.v","_outputPath":"†state.a"}],"output":null}`)
	final := costly(`{"calls":[],"output":2}`)
	schema := json.RawMessage(`{"type":"integer"}`)
	whole, err := agent.Run(t.Context(), agent.Config{Provider: scripted.New(step1, final), Registry: reg}, schema, msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		at   func(store.Entry) bool
	}{
		{"step 1's usage", func(e store.Entry) bool { return e.Type == store.EntryUsage && e.Call == "1" }},
		{"the call's settling", func(e store.Entry) bool { return e.Type == store.EntrySettled }},
		{"step 1's plan", func(e store.Entry) bool {
			return e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"type":"plan"`)
		}},
		{"the end", func(e store.Entry) bool { return e.Type == store.EntryEnd }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := newCrashStore(1 << 40)
			st.crashOn = tt.at
			_, err := agent.Run(t.Context(), agent.Config{Provider: scripted.New(step1, final), Registry: reg, Store: st, RunID: "k"}, schema, msgs)
			if !errors.Is(err, errCrash) {
				t.Fatalf("crashed run: %v", err)
			}
			if tt.name == "the end" && !slices.ContainsFunc(st.lost, func(e store.Entry) bool { return e.Type == store.EntryUsage && e.Call == "2" }) {
				t.Errorf("the end was written apart from the last step's usage: %v", entryTypes(st.lost))
			}
			journaled := false
			for _, e := range journal(t, st, "k") {
				journaled = journaled || e.Type == store.EntryUsage
			}
			// The resume answers whatever step the journal left open.
			p := scripted.New(step1, final)
			if journaled {
				p = scripted.New(final)
			}
			res, err := agent.Resume(t.Context(), agent.Config{Provider: p, Registry: reg, Store: restart(t, st, "k")}, "k")
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if journaled && res.Usage != whole.Usage {
				t.Errorf("usage %+v, uninterrupted %+v", res.Usage, whole.Usage)
			}
		})
	}
}

func TestDurableLatentCallUsage(t *testing.T) {
	// A latent call's own request is journaled with the call, and counts
	// in the run's usage.
	st := store.NewMemory()
	p := scripted.New(
		costly(`{"calls":[{"_tool":"guess","q":"x","_outputPath":"†state.g"}],"output":null}`),
		costly(`{"output":"latent answer"}`), // the call's own request
		costly(`{"calls":[],"output":"done"}`))
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Store: st, RunID: "l", Concurrency: 1}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":{"guess":{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"string"}},"required":["q"]}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (provider.Usage{Input: 30, Output: 24}); res.Usage != want {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
	calls := 0
	for _, e := range journal(t, st, "l") {
		if e.Type == store.EntryUsage && e.Call == "1.0" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d usage entries of call 1.0", calls)
	}
	again, err := agent.Resume(t.Context(), agent.Config{Provider: scripted.New(), Store: st}, "l")
	if err != nil || again.Usage != res.Usage {
		t.Errorf("resumed usage %+v, %v", again.Usage, err)
	}
}

// hangingAppends is a store whose journal writes never come back, while
// the rest of it answers: renewals of the lease made while an Append
// hangs are counted.
type hangingAppends struct {
	store.Store
	hanging  atomic.Bool
	renewals atomic.Int64 // made while an Append hung
}

func (s *hangingAppends) Append(ctx context.Context, id string, lease store.Lease, entries ...store.Entry) error {
	s.hanging.Store(true)
	<-ctx.Done()
	return ctx.Err()
}

func (s *hangingAppends) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	if s.hanging.Load() {
		s.renewals.Add(1)
	}
	return s.Store.Acquire(ctx, id, l, now)
}

func TestDurableAppendHangs(t *testing.T) {
	// A journal write that does not come back within the lease's time
	// would land, if ever, after another process may have taken the run:
	// the run gives up on it and returns, rather than hanging with it.
	// The writes it makes as it stops (its status, its record) get no
	// time of their own, so it returns a lease after the write began, and
	// the lease is not renewed once the write has hung for a renewal
	// period.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("quick", json.RawMessage(`{"type":"object"}`))
		reg.Activity("quick", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return agent.Value("done")
		}))
		mem := store.NewMemory()
		st := &hangingAppends{Store: mem}
		cfg := agent.Config{Registry: reg, Store: st, RunID: "stuck", LeaseTTL: 3 * time.Second}
		start := time.Now()
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"quick","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"quick"}]`))
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "journal of run stuck: the store did not answer within the run's lease (3s)") {
			t.Fatalf("the run whose journal writes hang: %v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the run took %v to return, with a lease of 3s", d)
		}
		// The renewal a period into the hang is the last.
		if n := st.renewals.Load(); n > 1 {
			t.Errorf("the lease was renewed %d times while the journal write hung", n)
		}
		if run, _ := mem.Load(context.Background(), "stuck"); run.Status == store.Done {
			t.Errorf("the run whose journal write hung is %s", run.Status)
		}
	})
}

// hangingTakes is a store whose Create and Acquire never come back: a
// database that stopped answering before a run or a resume took the run.
type hangingTakes struct{ runStore }

func (s hangingTakes) Create(ctx context.Context, run store.Run, entries ...store.Entry) error {
	<-ctx.Done()
	return ctx.Err()
}

func (s hangingTakes) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestDurableTakeHangs(t *testing.T) {
	// The write that takes a run, a new run's Create or a resume's
	// Acquire, waits no longer than the lease lasts either: against a
	// store that does not answer, the run or the resume returns then,
	// saying so, rather than hanging with it.
	synctest.Test(t, func(t *testing.T) {
		reg := agent.NewRegistry()
		reg.Tool("quick", json.RawMessage(`{"type":"object"}`))
		reg.Activity("quick", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return agent.Value("done")
		}))
		mem := store.NewMemory()
		if err := mem.Create(context.Background(), store.Run{ID: "old", Kind: "plan", Status: store.Interrupted}); err != nil {
			t.Fatal(err)
		}
		cfg := agent.Config{Registry: reg, Store: hangingTakes{mem}, RunID: "new", LeaseTTL: 3 * time.Second}
		for _, tt := range []struct {
			name, want string
			run        func() error
		}{
			{"create", "create run new: the store did not answer within the run's lease (3s)", func() error {
				_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"quick","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"quick"}]`))
				return err
			}},
			{"resume", "resume old: the store did not answer within the run's lease (3s)", func() error {
				_, err := agent.Resume(context.Background(), cfg, "old")
				return err
			}},
		} {
			start := time.Now()
			err := tt.run()
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s against a store that does not answer: %v", tt.name, err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%s took %v to return, with a lease of 3s", tt.name, d)
			}
		}
	})
}

// errStoreDown is the error of a store that cannot be reached.
var errStoreDown = errors.New("connection refused")

// unrenewable is a store whose renewals of a lease fail at once, as when
// its server went away, and whose write that takes the run (a Create or
// a resume's Acquire) answers rtt after it landed. A hanging read
// (Entries) waits until its ctx is done, noting the time then in
// *stopped.
type unrenewable struct {
	runStore
	rtt     time.Duration
	took    atomic.Bool
	hang    bool
	reading chan struct{}
	stopped *atomic.Int64
}

func (s *unrenewable) Create(ctx context.Context, run store.Run, entries ...store.Entry) error {
	err := s.runStore.Create(ctx, run, entries...)
	time.Sleep(s.rtt) // the answer's way back
	s.took.Store(true)
	return err
}

func (s *unrenewable) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	if s.took.Load() {
		return errStoreDown
	}
	err := s.runStore.Acquire(ctx, id, l, now)
	time.Sleep(s.rtt)
	s.took.Store(true)
	return err
}

func (s *unrenewable) Entries(ctx context.Context, id string, after int64) iter.Seq2[store.Entry, error] {
	if !s.hang {
		return s.runStore.Entries(ctx, id, after)
	}
	return func(yield func(store.Entry, error) bool) {
		close(s.reading)
		<-ctx.Done()
		s.stopped.Store(time.Now().UnixNano())
		yield(store.Entry{}, ctx.Err())
	}
}

func TestDurableLeaseLapsesWhenItExpires(t *testing.T) {
	// A run whose renewals fail holds its lease until the expiry the
	// store has for it, and not a moment longer: from then on another
	// process may take the run over, so the run must have stopped its
	// calls by then. The run's own idea of that expiry is the one its
	// writes sent, not one it took later (the write that took the run
	// answered a round trip after it was sent), and it lets go at that
	// expiry, not at the renewal tick after it (a write renewed the
	// lease between two ticks).
	const ttl = 3 * time.Second
	for _, tt := range []struct {
		name string
		rtt  time.Duration
		// plan runs the run; resume resumes it (its journal read hangs).
		plan   string
		resume bool
	}{
		{name: "created a round trip before", rtt: 200 * time.Millisecond, plan: `[{"_tool":"long","_outputPath":"†state.s"}]`},
		{name: "resumed a round trip before", rtt: 200 * time.Millisecond, resume: true},
		{name: "renewed by a write between ticks", plan: `[{"_tool":"half","_outputPath":"†state.h"},{"_tool":"long","after":"†state.h","_outputPath":"†state.s"}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stopped atomic.Int64
				clock := time.Now
				reg := agent.NewRegistry()
				working := make(chan struct{})
				reg.Tool("half", json.RawMessage(`{"type":"object"}`))
				reg.Activity("half", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
					time.Sleep(ttl / 2) // the journal write after it falls between two renewal ticks
					return agent.Value("half")
				}))
				reg.Tool("long", json.RawMessage(`{"type":"object"}`))
				reg.Activity("long", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
					close(working)
					<-ctx.Done()
					stopped.Store(clock().UnixNano())
					return nil, ctx.Err()
				}))
				mem := store.NewMemory()
				st := &unrenewable{runStore: mem, rtt: tt.rtt, hang: tt.resume, reading: working, stopped: &stopped}
				cfg := agent.Config{Registry: reg, Store: st, RunID: "r", LeaseTTL: ttl, Clock: clock}
				start, done := clock(), make(chan error, 1)
				if tt.resume {
					if err := mem.Create(context.Background(), store.Run{ID: "r", Kind: "plan", Status: store.Interrupted}); err != nil {
						t.Fatal(err)
					}
					go func() {
						_, err := agent.Resume(context.Background(), cfg, "r")
						done <- err
					}()
				} else {
					go func() {
						_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, tt.plan), planCtx(t, `[{"type":"tool","tool":"half"},{"type":"tool","tool":"long"}]`))
						done <- err
					}()
				}
				<-working
				run, err := mem.Load(context.Background(), "r")
				if err != nil {
					t.Fatal(err)
				}
				expires := run.Lease.Expires
				time.Sleep(expires.Sub(clock()))
				synctest.Wait()
				// The store lets another take the run from now on.
				if err := mem.Acquire(context.Background(), "r", store.Lease{Owner: "other", Expires: expires.Add(time.Minute)}, clock()); err != nil {
					t.Fatalf("another process at the lease's expiry: %v", err)
				}
				if stopped.Load() == 0 {
					t.Errorf("the run still worked %v in, when its lease expired and another took the run", expires.Sub(start))
				}
				err = <-done
				if !strings.Contains(err.Error(), "lost its lease: not renewed before it expired") || !errors.Is(err, errStoreDown) {
					t.Errorf("the run whose renewals failed: %v", err)
				}
				if at := time.Unix(0, stopped.Load()); at.After(expires) {
					t.Errorf("the run stopped %v after its lease expired", at.Sub(expires))
				}
			})
		})
	}
}

// renewedFirst is a store where a renewal of the lease, sent after the
// resume's first Save, lands before it: at that Save, the holder's
// Acquire for a round trip later goes first. It notes the lease the
// renewal gave and the one the store has after the Save.
type renewedFirst struct {
	runStore
	renewed, after store.Lease
}

func (s *renewedFirst) Save(ctx context.Context, owner string, run store.Run, entries ...store.Entry) error {
	if run.Lease.Owner == "" || s.renewed.Owner != "" { // a release, or not the first
		return s.runStore.Save(ctx, owner, run, entries...)
	}
	s.renewed = store.Lease{Owner: owner, Expires: run.Lease.Expires.Add(200 * time.Millisecond)}
	if err := s.runStore.Acquire(ctx, run.ID, s.renewed, run.Lease.Expires); err != nil {
		return err
	}
	if err := s.runStore.Save(ctx, owner, run, entries...); err != nil {
		return err
	}
	got, err := s.Load(ctx, run.ID)
	s.after = got.Lease
	return err
}

func TestDurableResumeSaveKeepsRenewal(t *testing.T) {
	forEachStore(t, testDurableResumeSaveKeepsRenewal)
}

// A resume's first Save, sent before a renewal of its lease and landing
// after it, leaves the lease the renewal gave: a write of the holder
// never shortens its lease.
func testDurableResumeSaveKeepsRenewal(t *testing.T, st runStore) {
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
	cfg := agent.Config{Registry: reg, Store: st, RunID: "r"}
	plan, msgs := planOf(t, `[{"_tool":"again","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"again"}]`)
	if _, err := agent.ExecutePlan(ctx, cfg, plan, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut run: %v", err)
	}
	rf := &renewedFirst{runStore: st}
	cfg.Store = rf
	if _, err := agent.Resume(t.Context(), cfg, "r"); err != nil {
		t.Fatal(err)
	}
	if rf.renewed.Owner == "" {
		t.Fatal("the resume made no Save keeping its lease")
	}
	if rf.after.Owner != rf.renewed.Owner || rf.after.Expires.Before(rf.renewed.Expires) {
		t.Errorf("after the resume's first Save the lease is %+v; the renewal before it gave %+v", rf.after, rf.renewed)
	}
}

func TestDurableLeaseClockAhead(t *testing.T) {
	// Config.Clock stamps what the run writes; it need not keep pace
	// with the time that passes. A run whose clock runs ahead (a test's
	// clock that steps a minute at each reading, here) or stands still
	// keeps its lease while its store answers: the lease lasts its TTL
	// of the time that passes, not of the clock's readings.
	for name, clock := range map[string]func() func() time.Time{
		"stepping": func() func() time.Time {
			var steps atomic.Int64
			return func() time.Time { return fixed().Add(time.Duration(steps.Add(1)) * time.Minute) }
		},
		"fixed": func() func() time.Time { return fixed },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := agent.NewRegistry()
				reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
				reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
					select {
					case <-time.After(10 * time.Second):
						return agent.Value("done")
					case <-ctx.Done():
						return nil, context.Cause(ctx)
					}
				}))
				st := store.NewMemory()
				cfg := agent.Config{Registry: reg, Store: st, RunID: "r", LeaseTTL: 3 * time.Second, Clock: clock()}
				if _, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`)); err != nil {
					t.Fatalf("a healthy run: %v", err)
				}
			})
		})
	}
}

func TestDurableLeaseLapsesClockFixed(t *testing.T) {
	// A run whose clock stands still and whose renewals fail stops when
	// its lease has lasted its TTL, though its clock never reaches the
	// expiry it stamped.
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		reg := agent.NewRegistry()
		reg.Tool("long", json.RawMessage(`{"type":"object"}`))
		reg.Activity("long", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}))
		var stopped atomic.Int64
		st := &unrenewable{runStore: store.NewMemory(), stopped: &stopped}
		cfg := agent.Config{Registry: reg, Store: st, RunID: "r", LeaseTTL: ttl, Clock: fixed}
		start, done := time.Now(), make(chan error, 1)
		go func() {
			_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"long","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"long"}]`))
			done <- err
		}()
		select {
		case err := <-done:
			if !strings.Contains(err.Error(), "lost its lease: not renewed before it expired") || !errors.Is(err, errStoreDown) {
				t.Errorf("the run whose renewals failed: %v", err)
			}
			if d := time.Since(start); d > ttl {
				t.Errorf("the run stopped %v in, its lease lasting %v", d, ttl)
			}
		case <-time.After(time.Hour):
			t.Fatal("the run whose renewals failed still ran an hour in")
		}
	})
}
