package agent_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// openSQLite opens n stores on one new database file, as n acts
// processes sharing it do.
func openSQLite(t testing.TB, n int) []*sqlite.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	stores := make([]*sqlite.Store, n)
	for i := range stores {
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	return stores
}

// TestSQLiteConcurrentRuns runs 40 runs at once over two stores on one
// file, as two acts processes do, half of them interrupted at their
// second step; then resumes each interrupted run from both stores at
// once; then continues each run from both stores at once. No write fails
// for the other store's lock, every journal is numbered 1 to n with no
// gap, and of two resumes or Continues of one run racing, each either
// runs it or is refused as the run is held by the other: a run resumed
// twice ends once.
func TestSQLiteConcurrentRuns(t *testing.T) {
	stores := openSQLite(t, 2)
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()

	const runs = 40
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			answers, requests := newReplay().provider(), 0
			p := answers
			if i%2 == 0 {
				p = provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
					if requests++; requests == 2 {
						cancel()
					}
					return answers.Generate(ctx, req)
				})
			}
			cfg := agent.Config{Provider: p, Registry: reg, Store: stores[i%2], RunID: fmt.Sprint("r", i)}
			_, err := agent.Run(ctx, cfg, schema, msgs)
			if i%2 == 0 && !errors.Is(err, context.Canceled) || i%2 == 1 && err != nil {
				t.Errorf("run %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i := 0; i < runs; i += 2 {
		if run, err := stores[0].Load(t.Context(), fmt.Sprint("r", i)); err != nil || run.Status != store.Interrupted {
			t.Fatalf("run %d cancelled: %+v, %v", i, run, err)
		}
	}

	// race runs f for each run of ids from both stores at once, and
	// returns how often it ran per run: a refusal as another holds the
	// run does not count.
	race := func(what string, ids []int, f func(cfg agent.Config, id string) error) []int {
		ran := make([]int, runs)
		var mu sync.Mutex
		for _, i := range ids {
			for k := range stores {
				wg.Go(func() {
					id := fmt.Sprint("r", i)
					err := f(agent.Config{Provider: newReplay().provider(), Registry: reg, Store: stores[k]}, id)
					switch {
					case err == nil:
						mu.Lock()
						ran[i]++
						mu.Unlock()
					case errors.Is(err, store.ErrLeased):
					default:
						t.Errorf("%s %s through store %d: %v", what, id, k, err)
					}
				})
			}
		}
		wg.Wait()
		return ran
	}
	var interrupted, all []int
	for i := range runs {
		if i%2 == 0 {
			interrupted = append(interrupted, i)
		}
		all = append(all, i)
	}
	resumed := race("resume", interrupted, func(cfg agent.Config, id string) error {
		_, err := agent.Resume(context.Background(), cfg, id)
		return err
	})
	turns := race("continue", all, func(cfg agent.Config, id string) error {
		_, err := agent.Continue(context.Background(), cfg, id, message.Text("again"))
		return err
	})
	for i := range runs {
		id := fmt.Sprint("r", i)
		st := stores[(i+1)%2]
		es := journal(t, st, id)
		for k, e := range es {
			if e.Seq != int64(k+1) {
				t.Fatalf("run %s: entry %d has Seq %d", id, k, e.Seq)
			}
		}
		if i%2 == 0 && resumed[i] == 0 {
			t.Errorf("run %s: no resume ran it", id)
		}
		if n := entryTypes(es)[store.EntryEnd]; n != 1+turns[i] || turns[i] == 0 {
			t.Errorf("run %s: %d turns continued it, and its journal has %d ends, want one more", id, turns[i], n)
		}
		run, err := st.Load(t.Context(), id)
		if err != nil || run.Status != store.Done || run.Lease.Owner != "" {
			t.Errorf("run %s after it: %+v, %v", id, run, err)
		}
	}
}
