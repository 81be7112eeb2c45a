package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/store"
)

func testCreate(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Lease = store.Lease{Owner: "host/1", Expires: at(time.Minute)}
	e1 := message("one", t0)
	e1.Seq = 42
	e2 := store.Entry{Seq: -1, Type: store.EntryUsage, Call: "1", Data: json.RawMessage(`{"input":3}`), Time: at(time.Second)}
	create(t, s, run, e1, e2)
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after Create mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(e1, e2), opts); diff != "" {
		t.Errorf("Entries after Create mismatch (-got +want):\n%s", diff)
	}
	// Appends number on from Create's entries.
	e3 := store.Entry{Type: store.EntryStatus, Data: json.RawMessage(`{"status":"interrupted"}`), Time: at(2 * time.Second)}
	appendAs(t, s, "r", "host/1", e3)
	want := numbered(e1, e2, e3)
	if diff := cmp.Diff(entries(t, s, "r", 0), want, opts); diff != "" {
		t.Errorf("Entries after Create and Append mismatch (-got +want):\n%s", diff)
	}

	// The id is taken, with or without entries, by any owner.
	other := store.Run{ID: "r", Kind: "plan", Idea: "other", Created: at(time.Hour)}
	for _, es := range [][]store.Entry{nil, {message("other", t0)}} {
		if err := s.Create(t.Context(), other, es...); !errors.Is(err, store.ErrExists) {
			t.Errorf("Create of a taken id with %d entries: error = %v, want ErrExists", len(es), err)
		}
	}
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after a second Create mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), want, opts); diff != "" {
		t.Errorf("Entries after a second Create mismatch (-got +want):\n%s", diff)
	}
	if got := collect(t, c.Runs(t.Context())); len(got) != 1 {
		t.Errorf("Runs after two Creates of one id gave %d runs, want 1", len(got))
	}

	// A run created without entries has an empty journal, which the
	// first Append starts at 1.
	create(t, s, store.Run{ID: "empty"})
	if got := entries(t, s, "empty", 0); len(got) != 0 {
		t.Errorf("Entries of a run created without entries = %v, want none", got)
	}
	appendEntries(t, s, "empty", e3)
	if diff := cmp.Diff(entries(t, s, "empty", 0), numbered(e3), opts); diff != "" {
		t.Errorf("Entries after the first Append mismatch (-got +want):\n%s", diff)
	}
}

func testCreateAtomic(t *testing.T, s store.Store, c store.Catalog) {
	// A Create that fails keeps nothing, and leaves the id free.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	es := []store.Entry{message("a", t0), message("b", t0)}
	if err := s.Create(ctx, sampleRun("r"), es...); err == nil {
		t.Errorf("Create with a cancelled ctx returned nil")
	}
	if _, err := c.Load(t.Context(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load after a cancelled Create: error = %v, want ErrNotFound", err)
	}
	create(t, s, sampleRun("r"), es...)
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(es...), opts); diff != "" {
		t.Errorf("Entries after Create mismatch (-got +want):\n%s", diff)
	}

	// A reader never sees a run without the entries it was created with.
	const runs, journal = 20, 3
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for i := range runs {
			var es []store.Entry
			for k := range journal {
				es = append(es, message(fmt.Sprint(i, "/", k), t0))
			}
			if err := s.Create(t.Context(), sampleRun(fmt.Sprint("run-", i)), es...); err != nil {
				t.Errorf("Create(run-%d): %v", i, err)
				return
			}
		}
	})
	wg.Go(func() {
		for !done.Load() {
			for i := range runs {
				id := fmt.Sprint("run-", i)
				_, err := c.Load(t.Context(), id)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("Load(%s): %v", id, err)
					return
				}
				n := 0
				for _, err := range s.Entries(t.Context(), id, 0) {
					if err != nil {
						t.Errorf("Entries(%s): %v", id, err)
						return
					}
					n++
				}
				if n != journal {
					t.Errorf("Entries(%s) of a run that Load found gave %d entries, want %d", id, n, journal)
					return
				}
			}
		}
	})
	wg.Wait()
}

func testCreateRace(t *testing.T, s store.Store, c store.Catalog) {
	for round := range 5 {
		id := fmt.Sprint("race-", round)
		journal := func(g int) []store.Entry {
			return []store.Entry{message(fmt.Sprint(g, "/0"), t0), message(fmt.Sprint(g, "/1"), t0)}
		}
		racer := func(g int) store.Run {
			run := sampleRun(id)
			run.Idea = fmt.Sprint("racer-", g)
			run.Lease = store.Lease{Owner: run.Idea, Expires: at(time.Minute)}
			return run
		}
		errs := race(concurrency, func(g int) error {
			return s.Create(t.Context(), racer(g), journal(g)...)
		})
		g := winner(t, "Create "+id, errs, store.ErrExists)
		if g < 0 {
			continue
		}
		if diff := cmp.Diff(load(t, c, id), utc(racer(g)), opts); diff != "" {
			t.Errorf("Load(%s) mismatch, want the winner's (-got +want):\n%s", id, diff)
		}
		if diff := cmp.Diff(entries(t, s, id, 0), numbered(journal(g)...), opts); diff != "" {
			t.Errorf("Entries(%s) mismatch, want the winner's (-got +want):\n%s", id, diff)
		}
	}
}
