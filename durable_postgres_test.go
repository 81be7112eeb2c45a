package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/provider"
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

// terminate ends the connections of application app on the test
// server, as a restart or a failover does, and returns how many.
func terminate(t *testing.T, app string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresConnectionsTerminated: the server ends the store's
// connections (pg_terminate_backend, as a restart or a failover does)
// while a run's calls work. The journal writes that follow, sent on
// those connections, are sent again on new ones: the run goes on and
// ends done, and its journal holds each entry once.
func TestPostgresConnectionsTerminated(t *testing.T) {
	app := "acts_" + strings.ToLower(rand.Text()[:10])
	st, err := postgres.Open(t.Context(), pgtest.Schema(t)+"&application_name="+app)
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
	if n := terminate(t, app); n == 0 {
		t.Fatal("no connection of the store to terminate")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the run whose connections were terminated: %v", err)
	}
	run, err := st.Load(t.Context(), "cut")
	if err != nil || run.Status != store.Done || run.Lease.Owner != "" {
		t.Errorf("after the run: %+v, %v", run, err)
	}
	types := map[store.EntryType]int{}
	for k, e := range journal(t, st, "cut") {
		if e.Seq != int64(k+1) {
			t.Fatalf("entry %d has Seq %d", k, e.Seq)
		}
		types[e.Type]++
	}
	if types[store.EntryStarted] != 2 || types[store.EntrySettled] != 2 || types[store.EntryEnd] != 1 {
		t.Errorf("journal entries %v, want each call started and settled once, and one end", types)
	}
}

// TestPostgresConnectionsTerminatedEachStep: the server ends the store's
// connections before every request of a loop run, between its steps. The
// run ends as a run the server left alone does, with the same journal.
func TestPostgresConnectionsTerminatedEachStep(t *testing.T) {
	app := "acts_" + strings.ToLower(rand.Text()[:10])
	st, err := postgres.Open(t.Context(), pgtest.Schema(t)+"&application_name="+app)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()
	mem := store.NewMemory()
	if _, err := agent.Run(t.Context(), agent.Config{Provider: newReplay().provider(), Registry: reg, Store: mem, RunID: "alone"}, schema, msgs); err != nil {
		t.Fatal(err)
	}
	want := entryTypes(journal(t, mem, "alone"))

	answers, ended := newReplay().provider(), 0
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		ended += terminate(t, app)
		return answers.Generate(ctx, req)
	})
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Store: st, RunID: "cut"}, schema, msgs)
	if err != nil {
		t.Fatalf("the run whose connections were terminated before each step: %v", err)
	}
	if ended == 0 {
		t.Fatal("no connection of the store was terminated")
	}
	es := journal(t, st, "cut")
	for k, e := range es {
		if e.Seq != int64(k+1) {
			t.Fatalf("entry %d has Seq %d", k, e.Seq)
		}
	}
	if got := entryTypes(es); !maps.Equal(got, want) {
		t.Errorf("journal entries %v, want %v as a run left alone", got, want)
	}
	journalHolds(t, st, "cut", res.Log)
	if run, err := st.Load(t.Context(), "cut"); err != nil || run.Status != store.Done || run.Lease.Owner != "" {
		t.Errorf("after the run: %+v, %v", run, err)
	}
}

// TestPostgresAppendRefused: a journal write the server refuses on a
// sound connection (here a trigger) is not sent again: the run stops with
// the server's error as after any failed write, saved failed with its
// lease given up, and a resume finishes it once the server takes writes.
func TestPostgresAppendRefused(t *testing.T) {
	url := pgtest.Schema(t)
	st, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	reg := agent.NewRegistry()
	started, release := blocking(reg)
	cfg := agent.Config{Registry: reg, Store: st, RunID: "refused"}
	done := make(chan error, 1)
	go func() {
		_, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`))
		done <- err
	}()
	<-started
	// A statement trigger that counts the inserts it refuses: one per
	// Append sent, as the count survives the statement's rollback.
	if _, err := conn.Exec(t.Context(), `
CREATE SEQUENCE tries;
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nextval('tries');
	RAISE EXCEPTION 'the journal is closed';
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON entries FOR EACH STATEMENT EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	close(release)
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "journal of run refused: append to run refused: ERROR: the journal is closed") {
		t.Fatalf("the run whose journal write was refused: %v", err)
	}
	var tries int64
	if err := conn.QueryRow(t.Context(), `SELECT last_value FROM tries`).Scan(&tries); err != nil {
		t.Fatal(err)
	}
	// The call's settling, then the run's status as it stops.
	if tries != 2 {
		t.Errorf("the server refused %d Appends, want 2: each sent once", tries)
	}
	run, err := st.Load(t.Context(), "refused")
	if err != nil || run.Status != store.Failed || run.Lease.Owner != "" {
		t.Errorf("after the run: %+v, %v", run, err)
	}
	if _, err := conn.Exec(t.Context(), `DROP TRIGGER refuse ON entries`); err != nil {
		t.Fatal(err)
	}
	// The call had started and is not idempotent: reported interrupted.
	if _, err := agent.Resume(t.Context(), agent.Config{Registry: reg, Store: st}, "refused"); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if run, err := st.Load(t.Context(), "refused"); err != nil || run.Status != store.Done {
		t.Errorf("after the resume: %+v, %v", run, err)
	}
}

// BenchmarkPostgresRoundTrips runs manyStepsRun (4 steps, 9 calls)
// against PostgreSQL through a proxy that counts the round trips to the
// server, and reports them per step: in all, and those that were pgx's
// pings of a connection idle for more than a second, or prepared a
// statement; and the store's writes per step. With wait=1.1s the model
// takes 1.1 s to answer, as a real one does, so the connections sit
// idle between steps. With ttl=3s the lease's renewal period, a third of
// Config.LeaseTTL, is shorter than a step, so the run's lease is renewed
// as it goes (each Acquire is a write here).
//
//	ACTS_TEST_POSTGRES=postgres://… go test -run '^$' -bench PostgresRoundTrips -benchtime 3x .
func BenchmarkPostgresRoundTrips(b *testing.B) {
	reg, _, schema, newReplay := manyStepsRun()
	_, msgs := tenTools()
	for _, tt := range []struct{ wait, ttl time.Duration }{{0, 0}, {1100 * time.Millisecond, 0}, {1100 * time.Millisecond, 3 * time.Second}} {
		wait := tt.wait
		name := fmt.Sprint("wait=", wait)
		if tt.ttl > 0 {
			name += fmt.Sprint("/ttl=", tt.ttl)
		}
		b.Run(name, func(b *testing.B) {
			url, count := pgtest.Proxy(b, pgtest.Schema(b))
			pg, err := postgres.Open(b.Context(), url)
			if err != nil {
				b.Fatal(err)
			}
			defer pg.Close()
			st := &countingStore{Store: pg}
			before := count.RoundTrips.Load()
			beforePings, beforePrepares := count.Pings.Load(), count.Prepares.Load()
			steps, runs := 0, 0
			for b.Loop() {
				runs++
				answers := newReplay().provider()
				p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
					time.Sleep(wait)
					return answers.Generate(ctx, req)
				})
				res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Store: st, RunID: fmt.Sprint("r", runs), LeaseTTL: tt.ttl}, schema, msgs)
				if err != nil {
					b.Fatal(err)
				}
				steps += res.Steps
			}
			n := float64(steps)
			b.ReportMetric(float64(count.RoundTrips.Load()-before)/n, "roundtrips/step")
			b.ReportMetric(float64(count.Pings.Load()-beforePings)/n, "pings/step")
			b.ReportMetric(float64(count.Prepares.Load()-beforePrepares)/n, "prepares/step")
			b.ReportMetric(float64(st.tx.Load())/n, "writes/step")
			b.ReportMetric(float64(st.acquires.Load())/n, "acquires/step")
		})
	}
}
