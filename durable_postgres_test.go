package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
)

// The tests of this file run durable runs against PostgreSQL as a
// deployment does: many runs at once, from several stores (processes)
// sharing one database.

// openPostgres opens n stores on one new schema, as n processes would.
func openPostgres(t testing.TB, n int) []*postgres.Store {
	t.Helper()
	url := pgtest.Schema(t)
	stores := make([]*postgres.Store, n)
	for i := range stores {
		s, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	return stores
}

// manyStepsRun is a loop run of four steps, three calls each in the
// first three, each step's calls reading the step before's.
func manyStepsRun() (*agent.Registry, []string, json.RawMessage, func() *replay) {
	reg, _ := tenTools()
	answers := []string{nCalls(3, true), nCalls(3, true), nCalls(3, true), `{"calls":[],"output":{"done":true}}`}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	return reg, answers, schema, func() *replay { return &replay{answers: answers} }
}

// entryTypes counts a journal's entries by type.
func entryTypes(es []store.Entry) map[store.EntryType]int {
	n := map[store.EntryType]int{}
	for _, e := range es {
		n[e.Type]++
	}
	return n
}

// TestPostgresConcurrentRuns runs 60 runs at once (200 without -short
// is BenchmarkPostgresConcurrentRuns), spread over three stores on one
// database: every journal is whole, numbered 1 to n with no gap, holds
// the run's log, and each run ends done with its lease given up.
func TestPostgresConcurrentRuns(t *testing.T) {
	stores := openPostgres(t, 3)
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()

	// What one run alone journals, in the memory store.
	mem := store.NewMemory()
	if _, err := agent.Run(t.Context(), agent.Config{Provider: newReplay().provider(), Registry: reg, Store: mem, RunID: "alone"}, schema, msgs); err != nil {
		t.Fatal(err)
	}
	want := entryTypes(journal(t, mem, "alone"))

	const runs = 60
	results := make([]*agent.RunResult, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			cfg := agent.Config{Provider: newReplay().provider(), Registry: reg, Store: stores[i%len(stores)], RunID: fmt.Sprint("r", i)}
			res, err := agent.Run(context.Background(), cfg, schema, msgs)
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	for i, res := range results {
		if res == nil {
			continue
		}
		id := fmt.Sprint("r", i)
		st := stores[(i+1)%len(stores)] // read through another process
		es := journal(t, st, id)
		for k, e := range es {
			if e.Seq != int64(k+1) {
				t.Fatalf("run %s: entry %d has Seq %d", id, k, e.Seq)
			}
		}
		if got := entryTypes(es); !maps.Equal(got, want) {
			t.Errorf("run %s: journal entries %v, want %v as alone", id, got, want)
		}
		journalHolds(t, st, id, res.Log)
		run, err := st.Load(t.Context(), id)
		if err != nil || run.Status != store.Done || run.Lease.Owner != "" || run.Usage != res.Usage {
			t.Errorf("run %s after it: %+v, %v", id, run, err)
		}
	}
}

// BenchmarkPostgresConcurrentRuns runs N runs of manyStepsRun at once
// over P stores on one database, and reports the wall time per step
// a run sees (ms/step) and the steps all runs make a second (steps/s):
// how a step's writes slow down as runs share the server and each
// store's pool (pgxpool's default, max(4, NumCPU) connections).
//
//	go test -run '^$' -bench PostgresConcurrentRuns -benchtime 3x .
func BenchmarkPostgresConcurrentRuns(b *testing.B) {
	if pgtest.URL(b) == "" {
		return
	}
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()
	for _, tt := range []struct{ runs, stores int }{{1, 1}, {50, 1}, {50, 4}, {200, 1}, {200, 4}} {
		b.Run(fmt.Sprintf("runs=%d/stores=%d", tt.runs, tt.stores), func(b *testing.B) {
			stores := openPostgres(b, tt.stores)
			var steps, round int
			start := time.Now()
			for b.Loop() {
				round++
				var wg sync.WaitGroup
				for i := range tt.runs {
					wg.Go(func() {
						cfg := agent.Config{Provider: newReplay().provider(), Registry: reg, Store: stores[i%tt.stores], RunID: fmt.Sprint(round, "-", i)}
						res, err := agent.Run(context.Background(), cfg, schema, msgs)
						if err != nil {
							b.Error(err)
							return
						}
						if i == 0 {
							steps = res.Steps
						}
					})
				}
				wg.Wait()
			}
			wall := time.Since(start)
			b.ReportMetric(float64(wall.Microseconds())/1000/float64(round*steps), "ms/step")
			b.ReportMetric(float64(round*steps*tt.runs)/wall.Seconds(), "steps/s")
		})
	}
}

// TestPostgresConnectionsTerminated: the server ends the store's
// connections (pg_terminate_backend, as a restart or a failover does)
// while a run's calls work. The next journal write fails saying so, the
// run returns, what was written before stays, and another process
// resumes the run once its lease expired. (Connections idle for more
// than a second are pinged before use, so a restart between writes that
// far apart goes unnoticed; these are used again at once.)
func TestPostgresConnectionsTerminated(t *testing.T) {
	app := "acts_" + strings.ToLower(rand.Text()[:10])
	url := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), url+"&application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := agent.NewRegistry()
	started, release := blocking(reg)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "cut", LeaseTTL: time.Second}
	done := make(chan error, 1)
	go func() {
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}, {"_tool":"slow","_outputPath":"†state.t"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`))
		done <- err
	}()
	<-started
	<-started
	before := journal(t, st, "cut")
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d connections: %v", n, err)
	}
	close(release)
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "journal of run cut") {
		t.Fatalf("the run whose connections were terminated: %v", err)
	}
	other, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	after := journal(t, other, "cut")
	if len(after) < len(before) || !slices.EqualFunc(before, after[:len(before)], func(a, b store.Entry) bool { return a.Seq == b.Seq && a.Type == b.Type }) {
		t.Errorf("the journal before the cut:\n%v\nafter it:\n%v", before, after)
	}
	// Another process resumes it, once the lease expired if the run could
	// not give it up: the calls had started, are not idempotent, and are
	// reported interrupted.
	var res *agent.RunResult
	for range 50 {
		if res, err = agent.Resume(t.Context(), agent.Config{Registry: reg, Store: other}, "cut"); !errors.Is(err, store.ErrLeased) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || res == nil {
		t.Fatalf("resume: %v", err)
	}
	run, err := other.Load(t.Context(), "cut")
	if err != nil || run.Status != store.Done || run.Lease.Owner != "" {
		t.Errorf("after the resume: %+v, %v", run, err)
	}
	for k, e := range journal(t, other, "cut") {
		if e.Seq != int64(k+1) {
			t.Fatalf("entry %d has Seq %d", k, e.Seq)
		}
	}
}
