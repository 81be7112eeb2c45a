package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
	"github.com/augceo/agent/store/sqlite"
)

// benchStore opens a store for a benchmark.
type benchStore struct {
	name string
	open func(b *testing.B) store.Store
}

// benchStores are the memory store, SQLite and PostgreSQL when
// ACTS_TEST_POSTGRES names a server; with none, no store first.
func benchStores(none bool) []benchStore {
	stores := []benchStore{
		{"memory", func(*testing.B) store.Store { return store.NewMemory() }},
		{"sqlite", func(b *testing.B) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"postgres", func(b *testing.B) store.Store {
			if os.Getenv("ACTS_TEST_POSTGRES") == "" {
				b.Skip("ACTS_TEST_POSTGRES is not set")
			}
			s, err := postgres.Open(context.Background(), pgtest.Schema(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	if none {
		stores = append([]benchStore{{"none", func(*testing.B) store.Store { return nil }}}, stores...)
	}
	return stores
}

// BenchmarkDurablePlan runs the instancing benchmark's plan over 1,000
// instances with no store, the memory store and SQLite, to show what
// durability costs per call.
func BenchmarkDurablePlan(b *testing.B) {
	const n = 1000
	reg, plan, msgs := instancesFixture(n)
	for _, tt := range benchStores(true) {
		b.Run("store="+tt.name, func(b *testing.B) {
			st := tt.open(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				cfg := agent.Config{Registry: reg, RunID: fmt.Sprint("r", i)}
				if st != nil {
					cfg.Store = st
				}
				res, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
				if err != nil {
					b.Fatal(err)
				}
				if res.Log.Len() != 4*n+4 {
					b.Fatalf("log has %d messages", res.Log.Len())
				}
			}
		})
	}
}

// countingStore counts the transactions (Create, Save, Acquire, Append),
// the Acquires among them, and the journal entries written through a
// store.
type countingStore struct {
	store.Store
	tx, acquires, entries, bytes atomic.Int64
}

func (s *countingStore) Create(ctx context.Context, run store.Run, es ...store.Entry) error {
	s.tx.Add(1)
	s.entries.Add(int64(len(es)))
	for _, e := range es {
		s.bytes.Add(int64(len(e.Data)))
	}
	return s.Store.Create(ctx, run, es...)
}

func (s *countingStore) Save(ctx context.Context, owner string, run store.Run, es ...store.Entry) error {
	s.tx.Add(1)
	s.entries.Add(int64(len(es)))
	for _, e := range es {
		s.bytes.Add(int64(len(e.Data)))
	}
	return s.Store.Save(ctx, owner, run, es...)
}

func (s *countingStore) Acquire(ctx context.Context, id string, l store.Lease, now time.Time) error {
	s.tx.Add(1)
	s.acquires.Add(1)
	return s.Store.Acquire(ctx, id, l, now)
}

func (s *countingStore) Append(ctx context.Context, id string, lease store.Lease, es ...store.Entry) error {
	s.tx.Add(1)
	s.entries.Add(int64(len(es)))
	for _, e := range es {
		s.bytes.Add(int64(len(e.Data)))
	}
	return s.Store.Append(ctx, id, lease, es...)
}

// BenchmarkDurableTurn holds conversations of T turns in each store, each
// turn a step with a code call and a step with the output, either as a
// new run a turn over the turn before's log, its answer and the user's
// message (turn=run), or as Continue of one run (turn=continue). It
// reports the time, the journal entries and the journal bytes per turn:
// a new run writes the whole conversation again, Continue only what the
// turn adds. It reports the store's writes per turn too.
func BenchmarkDurableTurn(b *testing.B) {
	reg, msgs := tenTools()
	r := &replay{answers: []string{`{"calls":[{"_tool":"t1","x":1,"_outputPath":"†state.y"}],"output":null}`, `{"calls":[],"output":{"done":true}}`}}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	msgs = append(msgs, message.Text("turn 0"))
	for _, tt := range benchStores(false) {
		for _, turns := range []int{10, 40, 160} {
			for _, mode := range []string{"run", "continue"} {
				b.Run(fmt.Sprintf("store=%s/T=%d/turn=%s", tt.name, turns, mode), func(b *testing.B) {
					inner := tt.open(b)
					counted := &countingStore{Store: inner}
					st := struct {
						*countingStore
						store.Catalog
					}{counted, inner.(store.Catalog)}
					ctx := context.Background()
					b.ReportAllocs()
					convs := 0
					for b.Loop() {
						convs++
						id := fmt.Sprint("c", convs)
						cfg := agent.Config{Provider: r.provider(), Registry: reg, Store: st, RunID: id + ".1"}
						res, err := agent.Run(ctx, cfg, schema, msgs)
						for k := 2; k <= turns && err == nil; k++ {
							said := message.Text(fmt.Sprint("turn ", k))
							if mode == "continue" {
								res, err = agent.Continue(ctx, agent.Config{Provider: r.provider(), Registry: reg, Store: st}, id+".1", said)
								continue
							}
							answer := message.Assistant(string(res.Solution.Output))
							cfg.RunID = fmt.Sprint(id, ".", k)
							res, err = agent.Run(ctx, cfg, schema, append(res.Log.Messages(), answer, said))
						}
						if err != nil {
							b.Fatal(err)
						}
						if want := len(msgs) + 2 + 4*(turns-1); res.Log.Len() != want {
							b.Fatalf("log of %d messages, want %d", res.Log.Len(), want)
						}
					}
					n := float64(convs * turns)
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/turn")
					b.ReportMetric(float64(counted.tx.Load())/n, "writes/turn")
					b.ReportMetric(float64(counted.entries.Load())/n, "entries/turn")
					b.ReportMetric(float64(counted.bytes.Load())/n, "B/turn")
				})
			}
		}
	}
}

// BenchmarkDurableRun is BenchmarkAgentRun/calls=10 (two steps, ten code
// calls) made durable: with the memory store, SQLite, and PostgreSQL
// when ACTS_TEST_POSTGRES names a server. It reports the store's
// transactions and journal entries per run.
func BenchmarkDurableRun(b *testing.B) {
	for _, tt := range benchStores(false) {
		b.Run("store="+tt.name, func(b *testing.B) {
			st := &countingStore{Store: tt.open(b)}
			reg, msgs := tenTools()
			r := &replay{answers: []string{tenCalls(false), `{"calls":[],"output":{"done":true}}`}}
			schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
			b.ReportAllocs()
			runs := 0
			for b.Loop() {
				runs++
				cfg := agent.Config{Provider: r.provider(), Registry: reg, Store: st, RunID: fmt.Sprint("r", runs)}
				res, err := agent.Run(context.Background(), cfg, schema, msgs)
				if err != nil || res.Steps != 2 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.tx.Load())/float64(runs), "tx/run")
			b.ReportMetric(float64(st.entries.Load())/float64(runs), "entries/run")
		})
	}
}

// BenchmarkDurableLoopGrowth is BenchmarkLoopGrowth journaled in each
// store: what the journal adds to a step must not grow with the run
// either.
func BenchmarkDurableLoopGrowth(b *testing.B) {
	for _, tt := range benchStores(false) {
		for _, steps := range []int{10, 100, 500} {
			b.Run(fmt.Sprintf("store=%s/S=%d", tt.name, steps), func(b *testing.B) {
				st := tt.open(b)
				loopGrowth(b, steps, func(run int) agent.Config {
					return agent.Config{Store: st, RunID: fmt.Sprint("r", run)}
				})
			})
		}
	}
}

// BenchmarkDurableResume resumes a run cut as it asked the model for its
// last step, after S steps of one call each (BenchmarkLoopGrowth's run),
// journaled in each store: reading the journal back, rebuilding the log,
// rendering the context afresh for the one step left, and finishing.
// What a resume costs grows with the run it resumes, once; it reports
// that per step of the journal read.
func BenchmarkDurableResume(b *testing.B) {
	for _, tt := range benchStores(false) {
		for _, steps := range []int{10, 100, 500} {
			b.Run(fmt.Sprintf("store=%s/S=%d", tt.name, steps), func(b *testing.B) {
				st := tt.open(b)
				reg, msgs := tenTools()
				answers := make([]string, steps)
				for i := range steps - 1 {
					answers[i] = fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
				}
				answers[steps-1] = `{"calls":[],"output":{"done":true}}`
				out := json.RawMessage(`{"type":"object"}`)
				cut := func(id string) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					cfg := agent.Config{Provider: cutAt(steps, cancel, answers...), Registry: reg, Store: st, RunID: id, MaxSteps: steps}
					if _, err := agent.Run(ctx, cfg, out, msgs); !errors.Is(err, context.Canceled) {
						b.Fatalf("cut run: %v", err)
					}
				}
				last := &replay{answers: answers[steps-1:]}
				b.ReportAllocs()
				runs := 0
				for b.Loop() {
					runs++
					id := fmt.Sprint("r", runs)
					b.StopTimer()
					cut(id)
					b.StartTimer()
					cfg := agent.Config{Provider: last.provider(), Registry: reg, Store: st}
					res, err := agent.Resume(context.Background(), cfg, id)
					if err != nil || res.Steps != steps {
						b.Fatalf("resume: %v (%d steps)", err, res.Steps)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*steps), "ns/step")
			})
		}
	}
}

// cutAt is a model that gives answers in turn, with usage, and calls
// cancel as it is asked for the n-th, failing it: a run cut (Ctrl-C) as
// it waits for the model.
func cutAt(n int, cancel context.CancelFunc, answers ...string) provider.Provider {
	asked := 0
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			if asked++; asked == n {
				cancel()
				yield(nil, ctx.Err())
				return
			}
			yield(&provider.Chunk{Text: answers[(asked-1)%len(answers)], Done: true, Usage: &provider.Usage{Input: 100, Output: 50}}, nil)
		}
	})
}

// BenchmarkContinueGrowth takes one turn with Continue (a step with a
// code call, a step with the output) of a conversation of T turns held in
// one run, in each store: the framework's cost of a turn as the
// conversation grows. Each turn goes on from its own copy of the
// conversation's journal, made outside the timer, so every turn counted
// is the (T+1)-th.
func BenchmarkContinueGrowth(b *testing.B) {
	reg, msgs := tenTools()
	r := &replay{answers: []string{`{"calls":[{"_tool":"t1","x":1,"_outputPath":"†state.y"}],"output":null}`, `{"calls":[],"output":{"done":true}}`}}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	msgs = append(msgs, message.Text("turn 1"))
	for _, tt := range benchStores(false) {
		for _, turns := range []int{10, 100, 1000} {
			b.Run(fmt.Sprintf("store=%s/T=%d", tt.name, turns), func(b *testing.B) {
				st := tt.open(b)
				cat := st.(store.Catalog)
				ctx := context.Background()
				cfg := agent.Config{Provider: r.provider(), Registry: reg, Store: st, RunID: "base"}
				_, err := agent.Run(ctx, cfg, schema, msgs)
				for k := 2; k <= turns && err == nil; k++ {
					_, err = agent.Continue(ctx, agent.Config{Provider: r.provider(), Registry: reg, Store: st}, "base", message.Text(fmt.Sprint("turn ", k)))
				}
				if err != nil {
					b.Fatal(err)
				}
				base, err := cat.Load(ctx, "base")
				if err != nil {
					b.Fatal(err)
				}
				var entries []store.Entry
				for e, err := range st.Entries(ctx, "base", 0) {
					if err != nil {
						b.Fatal(err)
					}
					entries = append(entries, e)
				}
				want := len(msgs) + 2 + 4*turns
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					b.StopTimer()
					n++
					run := base
					run.ID = fmt.Sprint("c", n)
					if err := st.Create(ctx, run, entries...); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					res, err := agent.Continue(ctx, agent.Config{Provider: r.provider(), Registry: reg, Store: st}, run.ID, message.Text("one more"))
					if err != nil {
						b.Fatal(err)
					}
					if res.Log.Len() != want {
						b.Fatalf("log of %d messages, want %d", res.Log.Len(), want)
					}
				}
			})
		}
	}
}

// BenchmarkDurableResumeWrites resumes a small run cut short, in each
// store, and reports the store's writes per resume (the Acquire that
// takes the run included): a loop run cut as it asked the model
// (cut=request), or in a call the resume runs again (cut=call), and a
// plan run cut in a call (cut=plan).
func BenchmarkDurableResumeWrites(b *testing.B) {
	reg := agent.NewRegistry()
	reg.Tool("again", json.RawMessage(`{"type":"object"}`))
	var cut atomic.Pointer[context.CancelFunc] // set: the next call cuts its run
	reg.Activity("again", agent.Idempotent(agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		if cancel := cut.Swap(nil); cancel != nil {
			(*cancel)()
			<-c.Done()
			return nil, c.Err()
		}
		return agent.Value("done")
	})))
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"again"`)}, message.Text("go")}
	step1 := `{"calls":[{"_tool":"again","_outputPath":"†state.s"}],"output":null}`
	last := `{"calls":[],"output":"†state.s"}`
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"again","_outputPath":"†state.s"}`)}
	for _, tt := range benchStores(false) {
		for _, mode := range []string{"request", "call", "plan"} {
			b.Run(fmt.Sprintf("store=%s/cut=%s", tt.name, mode), func(b *testing.B) {
				inner := tt.open(b)
				counted := &countingStore{Store: inner}
				st := struct {
					*countingStore
					store.Catalog
				}{counted, inner.(store.Catalog)}
				runs := 0
				for b.Loop() {
					runs++
					id := fmt.Sprint("r", runs)
					b.StopTimer()
					ctx, cancel := context.WithCancel(context.Background())
					cfg := agent.Config{Registry: reg, Store: inner, RunID: id}
					var err error
					switch mode {
					case "request":
						cfg.Provider = cutAt(2, cancel, step1)
						_, err = agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs)
					case "call":
						cut.Store(&cancel)
						cfg.Provider = scripted.Solutions(step1)
						_, err = agent.Run(ctx, cfg, json.RawMessage(`{}`), msgs)
					case "plan":
						cut.Store(&cancel)
						_, err = agent.ExecutePlan(ctx, cfg, plan, msgs[:1])
					}
					cancel()
					if !errors.Is(err, context.Canceled) {
						b.Fatalf("cut run: %v", err)
					}
					b.StartTimer()
					// Only the resume writes through counted.
					res, err := agent.Resume(context.Background(), agent.Config{Provider: scripted.Solutions(last), Registry: reg, Store: st}, id)
					if err != nil || res.Log.Len() == 0 {
						b.Fatalf("resume: %v", err)
					}
				}
				b.ReportMetric(float64(counted.tx.Load())/float64(runs), "writes/resume")
			})
		}
	}
}
