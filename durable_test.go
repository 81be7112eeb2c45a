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

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// crashStore is a store.Memory that stops keeping anything after a given
// number of writes to journals (Create counts as one), as a process
// killed at that moment would: writes fail and keep nothing, Saves are
// lost, and its lease is held until it expires.
type crashStore struct {
	*store.Memory
	left    atomic.Int64 // writes still allowed
	crashed atomic.Bool
	// crashOn, if set, crashes the store at the first append with an
	// entry it reports; written, if set, sees each entry appended.
	crashOn func(store.Entry) bool
	written func(store.Entry)
	// lost are the entries of the write the crash fell on.
	lost []store.Entry
}

var errCrash = errors.New("crashed")

func newCrashStore(appends int64) *crashStore {
	s := &crashStore{Memory: store.NewMemory()}
	s.left.Store(appends)
	return s
}

func (s *crashStore) write(es []store.Entry) error {
	if s.left.Add(-1) < 0 {
		if !s.crashed.Swap(true) {
			s.lost = slices.Clone(es)
		}
		return errCrash
	}
	return nil
}

func (s *crashStore) Create(ctx context.Context, run store.Run, es ...store.Entry) error {
	if err := s.write(es); err != nil {
		return err
	}
	return s.Memory.Create(ctx, run, es...)
}

func (s *crashStore) Append(ctx context.Context, id string, lease store.Lease, es ...store.Entry) error {
	return s.journal(es, func() error { return s.Memory.Append(ctx, id, lease, es...) })
}

// Save with entries is a journal write as an Append is; without, it
// fails once the store crashed.
func (s *crashStore) Save(ctx context.Context, owner string, run store.Run, es ...store.Entry) error {
	if len(es) > 0 {
		return s.journal(es, func() error { return s.Memory.Save(ctx, owner, run, es...) })
	}
	if s.crashed.Load() {
		return errCrash
	}
	return s.Memory.Save(ctx, owner, run)
}

// journal makes write, a write of es to the journal, unless the store
// crashes at it.
func (s *crashStore) journal(es []store.Entry, write func() error) error {
	if s.crashOn != nil && slices.ContainsFunc(es, s.crashOn) {
		s.left.Store(0)
	}
	if err := s.write(es); err != nil {
		return err
	}
	if err := write(); err != nil {
		return err
	}
	for _, e := range es {
		if s.written != nil {
			s.written(e)
		}
	}
	return nil
}

// restart is the store as a new process finds it once the crashed
// one's lease on run id has expired.
func restart(t *testing.T, s *crashStore, id string) *crashStore {
	t.Helper()
	expireLease(t, s.Memory, id)
	st := &crashStore{Memory: s.Memory}
	st.left.Store(1 << 40)
	return st
}

// expireLease lets the lease on run id lapse, as time passing would.
func expireLease(t *testing.T, st *store.Memory, id string) {
	t.Helper()
	run, err := st.Load(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && run.Lease.Owner == "" {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// Another owner takes it at its expiry, and lets it go.
	if err := st.Acquire(context.Background(), id, store.Lease{Owner: "janitor", Expires: run.Lease.Expires}, run.Lease.Expires); err != nil {
		t.Fatal(err)
	}
	run.Lease = store.Lease{}
	if err := st.Save(context.Background(), "janitor", run); err != nil {
		t.Fatal(err)
	}
}

// counted registers code tools a, b, c (the 3-call chain of the instancing
// benchmark) that count their runs per instance; c is idempotent.
func counted(reg *agent.Registry) *sync.Map {
	var runs sync.Map // "tool/instance" → *atomic.Int64
	for _, name := range []string{"a", "b", "c"} {
		reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
		var act agent.Activity = agent.Bind(func(ctx context.Context, p struct {
			V int `json:"v"`
		}) (map[string]int, error) {
			return map[string]int{"v": p.V + 1}, nil
		})
		act = countRuns(&runs, name, act)
		if name == "c" {
			act = agent.Idempotent(act)
		}
		reg.Activity(name, act)
	}
	return &runs
}

func countRuns(runs *sync.Map, name string, a agent.Activity) agent.Activity {
	return agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		n, _ := runs.LoadOrStore(name+"/"+c.Instance, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return a.Run(ctx, c)
	})
}

func chainPlan(t *testing.T, instances int) ([]json.RawMessage, []message.Message) {
	t.Helper()
	msgs := planCtx(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"},{"type":"tool","tool":"c"}]`)
	for i := range instances {
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: "input", Instance: fmt.Sprint("i", i), Data: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i*10))})
	}
	return planOf(t, `[{"_tool":"a","v":"†input.v","_outputPath":"†state.a"},
		{"_tool":"b","v":"†state.a.v","_outputPath":"†state.b"},
		{"_tool":"c","v":"†state.b.v","_outputPath":"†state.c"}]`), msgs
}

// logJSON is the log as JSON lines, for comparing runs.
func logJSON(t *testing.T, msgs []message.Message) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func journal(t *testing.T, st store.Store, id string) []store.Entry {
	t.Helper()
	var es []store.Entry
	for e, err := range st.Entries(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// sameLog checks that the log the journal of run id holds is log.
func sameLog(t *testing.T, st store.Store, id string, log *message.Log) {
	t.Helper()
	if got, want := journalLog(t, journal(t, st, id)), logJSON(t, log.Messages()); !slices.Equal(got, want) {
		t.Errorf("the journal's log differs from the run's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func journalLog(t *testing.T, es []store.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Type == store.EntryMessage {
			out = append(out, string(e.Data))
		}
	}
	return out
}

func TestDurablePlanJournal(t *testing.T) {
	reg := agent.NewRegistry()
	counted(reg)
	plan, msgs := chainPlan(t, 3)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "r1", Clock: fixedClock}
	res, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != "r1" {
		t.Errorf("RunID %q", res.RunID)
	}
	es := journal(t, st, "r1")
	if got, want := journalLog(t, es), logJSON(t, res.Log.Messages()); !slices.Equal(got, want) {
		t.Errorf("journal's log differs from the run's:\n got %q\nwant %q", got, want)
	}
	started, settled := map[string]int{}, map[string]int{}
	for i, e := range es {
		switch e.Type {
		case store.EntryStarted:
			started[e.Call]++
		case store.EntrySettled:
			if started[e.Call] != 1 {
				t.Errorf("call %s settled before it started", e.Call)
			}
			settled[e.Call]++
		case store.EntryEnd:
			if i != len(es)-1 {
				t.Errorf("end entry at %d of %d", i, len(es))
			}
		}
		if e.Seq != int64(i+1) {
			t.Errorf("entry %d has Seq %d", i, e.Seq)
		}
	}
	if len(started) != 9 || len(settled) != 9 {
		t.Errorf("started %v, settled %v; want the 9 calls once each", started, settled)
	}
	run, err := st.Load(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.Done || run.Kind != "plan" || len(run.Spec) == 0 {
		t.Errorf("run %+v", run)
	}
	// A call's output is in the journal before the calls that read it
	// start: b of i0 starts after a of i0's output.
	out, start := -1, -1
	for i, e := range es {
		if e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"_instance":"i0"`) && strings.Contains(string(e.Data), `"state"`) && out < 0 {
			out = i
		}
		if e.Type == store.EntryStarted && strings.Contains(string(e.Data), `"b"`) && strings.Contains(string(e.Data), `"i0"`) {
			start = i
		}
	}
	if out < 0 || start < 0 || out > start {
		t.Errorf("a's output at entry %d, b's start at %d", out, start)
	}
}

func TestDurablePlanResume(t *testing.T) {
	plan, msgs := chainPlan(t, 20)
	// The uninterrupted run.
	reg := agent.NewRegistry()
	counted(reg)
	want, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg, Clock: fixedClock, Concurrency: 1}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	wantState := map[string]string{}
	for _, id := range agent.InstanceIDs(msgs) {
		wantState[id] = stateOf(t, want.Log.Instance(id))
	}
	// At most four calls start in a round, so the run makes at least 15
	// writes for its 60 calls (more when they settle apart).
	for _, crashAt := range []int64{1, 2, 5, 9, 12, 15} {
		t.Run(fmt.Sprint("crash=", crashAt), func(t *testing.T) {
			st := newCrashStore(crashAt)
			reg := agent.NewRegistry()
			runs := counted(reg)
			cfg := agent.Config{Registry: reg, Store: st, RunID: "r", Clock: fixedClock, Concurrency: 4}
			_, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
			if !errors.Is(err, errCrash) {
				t.Fatalf("the crashed run returned %v", err)
			}
			before := journal(t, st, "r")
			settled := map[string]bool{}
			for _, e := range before {
				if e.Type == store.EntrySettled {
					settled[e.Call] = true
				}
			}
			// Resume in a new "process": a fresh registry, the store's
			// content only.
			st2 := restart(t, st, "r")
			reg2 := agent.NewRegistry()
			runs2 := counted(reg2)
			res, err := agent.Resume(context.Background(), agent.Config{Registry: reg2, Store: st2, Clock: fixedClock}, "r")
			if err != nil && crashAt > 1 {
				t.Fatalf("resume: %v", err)
			}
			if crashAt == 1 { // nothing was journaled: not even the run's context
				return
			}
			errs := planErrors(res.Log)
			for _, id := range agent.InstanceIDs(msgs) {
				got := stateOf(t, res.Log.Instance(id))
				interrupted := slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "interrupted") })
				if got != wantState[id] && !interrupted {
					t.Errorf("instance %s: state %s, want %s", id, got, wantState[id])
				}
			}
			// No call that settled ran again; every call ran at most once
			// in all, but for an idempotent c left unfinished.
			total := map[string]int64{}
			runs.Range(func(k, v any) bool { total[k.(string)] += v.(*atomic.Int64).Load(); return true })
			runs2.Range(func(k, v any) bool { total[k.(string)] += v.(*atomic.Int64).Load(); return true })
			for k, n := range total {
				if n > 1 && !strings.HasPrefix(k, "c/") {
					t.Errorf("%s ran %d times", k, n)
				}
			}
			for _, e := range before {
				if e.Type == store.EntryStarted && settled[e.Call] {
					var c struct {
						Tool     string `json:"_tool"`
						Instance string `json:"_instance"`
					}
					_ = json.Unmarshal(e.Data, &c)
					if v, ok := runs2.Load(c.Tool + "/" + c.Instance); ok && v.(*atomic.Int64).Load() > 0 {
						t.Errorf("settled call %s (%s/%s) ran again on resume", e.Call, c.Tool, c.Instance)
					}
				}
			}
			// Calls left unfinished: non-idempotent ones are reported,
			// idempotent ones ran again.
			for _, e := range errs {
				if strings.Contains(e, "interrupted") && strings.Contains(e, " in c:") {
					t.Errorf("idempotent c reported as interrupted: %s", e)
				}
			}
			run, _ := st.Load(context.Background(), "r")
			if run.Status != store.Done {
				t.Errorf("status %s after resume", run.Status)
			}
			// Resuming a finished run changes nothing.
			again, err := agent.Resume(context.Background(), agent.Config{Registry: reg2, Store: st2}, "r")
			if err != nil || !slices.Equal(logJSON(t, again.Log.Messages()), logJSON(t, res.Log.Messages())) {
				t.Errorf("resuming a finished run: %v", err)
			}
			if n := len(journal(t, st, "r")); n != len(journal(t, st2, "r")) {
				t.Errorf("resuming a finished run wrote to the journal")
			}
		})
	}
}

// TestDurableResumeEqualsUninterrupted checks the log of a resumed run
// against one that never stopped, when nothing was left unfinished: the
// crash fell between two calls.
func TestDurableResumeEqualsUninterrupted(t *testing.T) {
	plan, msgs := chainPlan(t, 1)
	reg := agent.NewRegistry()
	counted(reg)
	want, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg, Clock: fixedClock}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	// Appends, each made before the calls it starts run: the context; a
	// started; a settled with its output and b started; b settled and c
	// started; c settled with the end. A crash at the 3rd Append leaves a
	// unfinished (a is not idempotent), at the 4th b, at the 5th c (which
	// is idempotent and runs again).
	for _, tt := range []struct {
		appends int64
		errs    int
	}{{2, 3}, {3, 2}, {4, 0}} {
		t.Run(fmt.Sprint("appends=", tt.appends), func(t *testing.T) {
			st := newCrashStore(tt.appends)
			reg := agent.NewRegistry()
			counted(reg)
			cfg := agent.Config{Registry: reg, Store: st, RunID: "r", Clock: fixedClock}
			if _, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs); !errors.Is(err, errCrash) {
				t.Fatal(err)
			}
			st2 := restart(t, st, "r")
			res, err := agent.Resume(context.Background(), agent.Config{Registry: reg, Store: st2, Clock: fixedClock}, "r")
			if err != nil {
				t.Fatal(err)
			}
			errs := planErrors(res.Log)
			if len(errs) != tt.errs {
				t.Fatalf("errors %q", errs)
			}
			if tt.errs == 0 && !slices.Equal(logJSON(t, res.Log.Messages()), logJSON(t, want.Log.Messages())) {
				t.Errorf("resumed log\n%s\nwant\n%s", strings.Join(logJSON(t, res.Log.Messages()), "\n"), strings.Join(logJSON(t, want.Log.Messages()), "\n"))
			}
			// The unfinished call is reported, and the calls that read its
			// output never run.
			if tt.errs > 0 && (!strings.Contains(errs[0], "interrupted") || !strings.Contains(errs[len(errs)-1], "never became ready")) {
				t.Errorf("error %q", errs[0])
			}
			sameLog(t, st, "r", res.Log)
		})
	}
}

func TestDurableBreakIsResumable(t *testing.T) {
	plan, msgs := chainPlan(t, 5)
	reg := agent.NewRegistry()
	counted(reg)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "r", Concurrency: 1}
	plan, err := agent.InstancePlan(plan, agent.InstanceIDs(msgs))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ev, err := range agent.PlanEvents(context.Background(), cfg, plan, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventCallFinished {
			if n++; n == 4 {
				break
			}
		}
	}
	run, err := st.Load(context.Background(), "r")
	if err != nil || run.Status != store.Interrupted {
		t.Fatalf("status %s, %v", run.Status, err)
	}
	res, err := agent.Resume(context.Background(), cfg, "r")
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	for _, id := range agent.InstanceIDs(msgs) {
		if got := stateOf(t, res.Log.Instance(id)); !strings.Contains(got, `"c":{"v":`) {
			t.Errorf("%s: state %s", id, got)
		}
	}
}

func TestDurablePlanFailedRun(t *testing.T) {
	reg := agent.NewRegistry()
	counted(reg)
	st := store.NewMemory()
	plan := planOf(t, `[{"_tool":"nope","_outputPath":"†state.x"}]`)
	_, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Store: st, RunID: "bad"}, plan, nil)
	if err == nil {
		t.Fatal("no error")
	}
	run, lerr := st.Load(context.Background(), "bad")
	if lerr != nil || run.Status != store.Failed || !strings.Contains(run.Error, "nope") {
		t.Errorf("run %+v, %v", run, lerr)
	}
}

func TestResumeErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := agent.Resume(ctx, agent.Config{}, "x"); !errors.Is(err, agent.ErrNoStore) {
		t.Errorf("no store: %v", err)
	}
	if _, err := agent.Resume(ctx, agent.Config{Store: store.NewMemory()}, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}

// TestDurableLoopResume crashes a loop run in the middle of its first
// step, then resumes it with a model that answers the second step.
func TestDurableLoopResume(t *testing.T) {
	reg := agent.NewRegistry()
	runs := counted(reg)
	msgs := ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"},{"type":"tool","tool":"c"},{"type":"input","data":{"v":1}}]`)
	step1 := `{"calls":[{"_tool":"a","v":"†input.v","_outputPath":"†state.a"},{"_tool":"b","v":"†state.a.v","_outputPath":"†state.b"},{"_tool":"c","v":"†state.b.v","_outputPath":"†state.c"}],"output":null}`
	// Writes: the run with its context, a started, then in either order
	// the step's usage and a settled (+output) with b started, which go
	// together: crash when b's settling is written.
	st := newCrashStore(4)
	cfg := agent.Config{Provider: scripted.Solutions(step1), Registry: reg, Store: st, RunID: "loop", Clock: fixedClock}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, errCrash) {
		t.Fatalf("crashed run: %v", err)
	}
	st2 := restart(t, st, "loop")
	p := scripted.Solutions(`{"calls":[],"output":"†state.b"}`)
	cfg = agent.Config{Provider: p, Registry: reg, Store: st2, Clock: fixedClock}
	res, err := agent.Resume(context.Background(), cfg, "loop")
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || res.Solution == nil || !res.Solution.Done() {
		t.Fatalf("steps %d, solution %+v", res.Steps, res.Solution)
	}
	// a ran once; b was left unfinished and is not idempotent: reported;
	// c waited for b: it is in the journal from when the model wrote it,
	// and with b failed it never becomes ready, as in a run not stopped.
	if n, _ := runs.Load("a/"); n.(*atomic.Int64).Load() != 1 {
		t.Errorf("a ran %d times", n.(*atomic.Int64).Load())
	}
	errs := planErrors(res.Log)
	if len(errs) != 2 || !strings.Contains(errs[0], "interrupted") || !strings.Contains(errs[1], "c: never became ready") {
		t.Errorf("errors %q", errs)
	}
	// The first step's plan holds the three calls; the second made none.
	if plans := plansOf(res.Log); len(plans) != 1 || !strings.Contains(plans[0], `"_tool":"a"`) || !strings.Contains(plans[0], `"_tool":"b"`) || !strings.Contains(plans[0], `"_tool":"c"`) {
		t.Errorf("plan messages %q", plans)
	}
	// The model of the resumed run saw the first step's outputs.
	if reqs := p.Requests(); len(reqs) != 1 || !strings.Contains(fmt.Sprint(reqs[0].Messages), "interrupted") {
		t.Errorf("the resumed request did not see the interrupted call")
	}
	sameLog(t, st, "loop", res.Log)
}

// TestDurableCancelIsResumable cancels a run while a call runs: the call
// fails with the context's error, but in the journal it did not settle, and
// neither its error branch nor its error message are kept, so Resume runs
// it again as after a crash.
func TestDurableCancelIsResumable(t *testing.T) {
	reg := agent.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs atomic.Int64
	reg.Tool("pay", json.RawMessage(`{"type":"object"}`))
	reg.Activity("pay", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if runs.Add(1) == 1 {
			return interrupt(c, cancel) // Ctrl-C while the first attempt runs
		}
		return agent.Value("paid")
	})))
	plan := planOf(t, `[{"_tool":"pay","_outputPath":"†state.receipt || †state.failed"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "c"}
	res, err := agent.ExecutePlan(ctx, cfg, plan, planCtx(t, `[{"type":"tool","tool":"pay"}]`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if got := stateOf(t, res.Log); !strings.Contains(got, "failed") {
		t.Errorf("the run's own log shows what happened: %s", got)
	}
	stopped := false
	for _, e := range journal(t, st, "c") {
		if e.Type == store.EntryStatus { // the run's, not the call's
			stopped = strings.Contains(string(e.Data), `"status":"interrupted"`)
			continue
		}
		if e.Type == store.EntrySettled || strings.Contains(string(e.Data), "context canceled") {
			t.Errorf("journal keeps %s %s", e.Type, e.Data)
		}
	}
	if !stopped {
		t.Error("the journal does not say the run was interrupted")
	}
	if run, _ := st.Load(context.Background(), "c"); run.Status != store.Interrupted {
		t.Errorf("status %s", run.Status)
	}
	res, err = agent.Resume(context.Background(), cfg, "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"receipt":"paid"}` || len(planErrors(res.Log)) != 0 {
		t.Errorf("state %s, errors %q", got, planErrors(res.Log))
	}
}

// TestDurableCutLatentIsAskedAgain cancels a plan run while the model
// answers a call's own request: a latent call changes nothing outside the
// run, so Resume asks the model again, where a delegate's sub-run, which
// may have run activities, is reported interrupted.
func TestDurableCutLatentIsAskedAgain(t *testing.T) {
	for _, tt := range []struct {
		name, tool, state string
		errs              int
	}{
		{"latent", `{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"string"}}}`, `{"guess":"blue"}`, 0},
		{"delegate", `{"type":"object","description":"You guess.","properties":{"q":{"type":"string"},"_output":{"type":"string"}},"_delegate":"anonymous"}`, ``, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("guess", json.RawMessage(tt.tool))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The first request is cut by Ctrl-C; the resumed run's is answered.
			var asked atomic.Int64
			answer := scripted.Solutions(`{"output":"blue"}`)
			model := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
				if asked.Add(1) == 1 {
					return func(yield func(*provider.Chunk, error) bool) {
						cancel()
						<-c.Done()
						yield(nil, c.Err())
					}
				}
				return answer.Generate(c, req)
			})
			plan := planOf(t, `[{"_tool":"guess","q":"the sky","_outputPath":"†state.guess"}]`)
			st := store.NewMemory()
			cfg := agent.Config{Provider: model, Registry: reg, Store: st, RunID: "g"}
			if _, err := agent.ExecutePlan(ctx, cfg, plan, planCtx(t, `[{"type":"tool","tool":"guess"}]`)); !errors.Is(err, context.Canceled) {
				t.Fatalf("first attempt: %v", err)
			}
			res, err := agent.Resume(context.Background(), cfg, "g")
			if err != nil {
				t.Fatal(err)
			}
			errs := planErrors(res.Log)
			if got := stateOf(t, res.Log); got != tt.state || len(errs) != tt.errs {
				t.Errorf("state %s, errors %q; want %s and %d errors", got, errs, tt.state, tt.errs)
			}
			if tt.errs > 0 && !strings.Contains(errs[0], "interrupted") {
				t.Errorf("error %q, want the call reported interrupted", errs[0])
			}
		})
	}
}

// TestDurableDelegate runs a delegate call in a durable run, new and
// resumed: the delegate's sub-run is part of its call, not a run of the
// store (it would take the parent's id, and on resume its journal and
// lease).
func TestDurableDelegate(t *testing.T) {
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","properties":{"sent":{"type":"boolean"}}},"context":[
		{"type":"system","message":"You send messages."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("speaker", idea)
	reg.Tool("send", json.RawMessage(`{"type":"object","_delegate":"speaker","properties":{"text":{"type":"string"}}}`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
	reg.Activity("wait", agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		return interrupt(c, cancel) // the first attempt is interrupted here
	}))
	send := `{"calls":[{"_tool":"send","text":"hi","_outputPath":"†state.delivery"}],"output":null}`
	msgs := ctxOf(t, `[{"type":"tool","tool":"send"},{"type":"tool","tool":"wait"},{"type":"text","text":"Say hi"}]`)
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "d", Provider: scripted.Solutions(
		send, `{"output":{"sent":true}}`, // step 1 and its delegate
		`{"calls":[{"_tool":"wait","_outputPath":"†state.waited"}],"output":null}`, // step 2, interrupted
	)}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("first attempt: %v", err)
	}
	cfg.Provider = scripted.Solutions(
		send, `{"output":{"sent":true}}`, // step 3 and its delegate
		`{"calls":[],"output":"sent twice"}`,
	)
	res, err := agent.Resume(context.Background(), cfg, "d")
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"delivery":{"sent":true}}` {
		t.Errorf("state %s", got)
	}
	var ids []string
	for run, err := range st.Runs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID+":"+string(run.Status))
	}
	if !slices.Equal(ids, []string{"d:done"}) {
		t.Errorf("runs in the store: %q", ids)
	}
	settled := 0
	for _, e := range journal(t, st, "d") {
		if e.Type == store.EntrySettled && len(e.Data) == 0 {
			settled++
		}
	}
	if settled != 2 {
		t.Errorf("%d calls settled, want the two delegate calls", settled)
	}
}

// interrupt cancels a run from inside one of its calls, as Ctrl-C would
// while the call runs, and ends the call with the cut.
func interrupt(c context.Context, cancel context.CancelFunc) (*agent.Result, error) {
	cancel()
	<-c.Done()
	return nil, c.Err()
}

// A loop run goes on by asking the model, so resuming one without a
// Provider fails with ErrNoProvider, naming the run, and gives the run
// back as it found it; it used to panic on the first request.
func TestResumeLoopWithoutProvider(t *testing.T) {
	st := store.NewMemory()
	reg := agent.NewRegistry()
	counted(reg)
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[{"_tool":"a","v":1,"_outputPath":"†state.a"}],"output":null}`), Registry: reg, Store: st, RunID: "np"}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"text","text":"go"}]`)); !errors.Is(err, scripted.ErrExhausted) {
		t.Fatalf("run: %v", err)
	}
	before, _ := st.Load(context.Background(), "np")
	entries := len(journal(t, st, "np"))
	_, err := agent.Resume(context.Background(), agent.Config{Registry: reg, Store: st}, "np")
	if !errors.Is(err, agent.ErrNoProvider) || !errors.Is(err, agent.ErrRefused) || err.Error() != "agent: resume np: no provider" {
		t.Fatalf("resume without a provider: %v", err)
	}
	after, err := st.Load(context.Background(), "np")
	if err != nil || after.Lease.Owner != "" || after.Status != before.Status || len(journal(t, st, "np")) != entries {
		t.Errorf("the run after a failed resume: %+v, %v", after, err)
	}
	// A resume that went on and failed is no refusal: it wrote the run.
	_, err = agent.Resume(context.Background(), agent.Config{Provider: scripted.Solutions(), Registry: reg, Store: st}, "np")
	if !errors.Is(err, scripted.ErrExhausted) || errors.Is(err, agent.ErrRefused) {
		t.Errorf("a resume that failed after it began: %v", err)
	}
	if after, _ = st.Load(context.Background(), "np"); after.Status != store.Failed {
		t.Errorf("the run after a resume that failed: %+v", after)
	}
}

// TestDurableRunRefusedBeforeCreated: a loop whose first request cannot be
// made (its context offers a tool the registry lacks) fails before the
// run is created: no failed run is left that every resume would fail the
// same way.
func TestDurableRunRefusedBeforeCreated(t *testing.T) {
	st := store.NewMemory()
	p := scripted.Solutions(`{"calls":[],"output":{"done":true}}`)
	msgs := []message.Message{message.Text("Go."), {Type: message.TypeTool, Tool: json.RawMessage(`"ghost"`)}}
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), Store: st, RunID: "r"}
	_, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs)
	if !errors.Is(err, agent.ErrUnknownTool) || !errors.Is(err, agent.ErrRefused) {
		t.Fatalf("run: %v, want the unknown tool, refused", err)
	}
	if _, err := st.Load(context.Background(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("load: %v, want no run", err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	// The same context with the tool registered runs, and its first
	// request is the one prepared before the run was created.
	cfg.Registry.Tool("ghost", json.RawMessage(`{"type":"object"}`))
	res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil || res.Steps != 1 {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if run, err := st.Load(context.Background(), "r"); err != nil || run.Status != store.Done {
		t.Errorf("run %+v, %v", run, err)
	}
}

// appendsStore is a store.Memory that keeps the entries of each Append
// and Save after the run's Create, and the runs saved, by write (a run
// with no Status for an Append).
type appendsStore struct {
	*store.Memory
	mu      sync.Mutex
	appends [][]store.Entry
	saved   []store.Run
}

func (s *appendsStore) Append(ctx context.Context, id string, lease store.Lease, es ...store.Entry) error {
	s.mu.Lock()
	s.appends, s.saved = append(s.appends, slices.Clone(es)), append(s.saved, store.Run{})
	s.mu.Unlock()
	return s.Memory.Append(ctx, id, lease, es...)
}

func (s *appendsStore) Save(ctx context.Context, owner string, run store.Run, es ...store.Entry) error {
	s.mu.Lock()
	s.appends, s.saved = append(s.appends, slices.Clone(es)), append(s.saved, run)
	s.mu.Unlock()
	return s.Memory.Save(ctx, owner, run, es...)
}

// TestDurableStepEndIsOneAppend: once a step's answer is whole and
// nothing of it is left to run, the settling of its last call (or the
// answer's usage, when the calls settled as it streamed) goes in one
// Append with its plan message, and the last step's usage in one write
// with the run's end and its last Save, which says it is done and gives
// its lease up: nothing comes between them but the loop's own work, so
// a second write would only cost a round trip.
func TestDurableStepEndIsOneAppend(t *testing.T) {
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()
	st := &appendsStore{Memory: store.NewMemory()}
	res, err := agent.Run(t.Context(), agent.Config{Provider: newReplay().provider(), Registry: reg, Store: st, RunID: "r"}, schema, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var plans, ends int
	for i, es := range st.appends {
		has := func(typ store.EntryType, data string) bool {
			return slices.ContainsFunc(es, func(e store.Entry) bool { return e.Type == typ && strings.Contains(string(e.Data), data) })
		}
		if has(store.EntryMessage, `"type":"plan"`) {
			plans++
			// Its calls may all have settled as the answer streamed:
			// the answer's usage then ends the step.
			if !has(store.EntrySettled, "") && !has(store.EntryUsage, "") {
				t.Errorf("Append %d holds a plan and neither a settling nor the usage: %v", i, entryTypes(es))
			}
		}
		if has(store.EntryEnd, "") {
			ends++
			if !has(store.EntryUsage, "") {
				t.Errorf("write %d holds the end and no usage: %v", i, entryTypes(es))
			}
			if run := st.saved[i]; i != len(st.appends)-1 || run.Status != store.Done || run.Lease != (store.Lease{}) {
				t.Errorf("write %d of %d holds the end, saving %+v; want the last, a Save of the run done with no lease", i, len(st.appends), run)
			}
		}
	}
	if plans != 3 || ends != 1 {
		t.Errorf("%d writes with a plan, %d with the end; want 3 and 1", plans, ends)
	}
	// Per step with calls: their start, the usage, and at most one
	// settling per call, the last with the plan; then the last step's
	// usage with the end and the run's Save: at most 3×5+1 writes (21
	// when the three pairs were written apart).
	if n := len(st.appends); n > 3*5+1 {
		t.Errorf("%d writes, want at most 16", n)
	}
	journalHolds(t, st, "r", res.Log)
}
