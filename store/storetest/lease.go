package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/store"
)

// checkLeaseError fails t unless err is a *store.LeaseError, matching
// store.ErrLeased, for run id asked by owner and naming the lease held.
func checkLeaseError(t *testing.T, what string, err error, id, owner string, held store.Lease) {
	t.Helper()
	le, ok := errors.AsType[*store.LeaseError](err)
	if !ok || !errors.Is(err, store.ErrLeased) {
		t.Errorf("%s: error = %v, want a *store.LeaseError", what, err)
		return
	}
	want := store.LeaseError{Run: id, Owner: owner, Held: held}
	if diff := cmp.Diff(*le, want); diff != "" {
		t.Errorf("%s: LeaseError mismatch (-got +want):\n%s", what, diff)
	}
	checkUTC(t, what+": Held.Expires", le.Held.Expires)
}

func acquire(t *testing.T, s store.Store, id string, lease store.Lease, now time.Time) {
	t.Helper()
	if err := s.Acquire(t.Context(), id, lease, now); err != nil {
		t.Fatalf("Acquire(%q) for %q at %v: %v", id, lease.Owner, now, err)
	}
}

func testFencing(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Lease = store.Lease{Owner: "a", Expires: at(time.Minute)}
	m0 := message("m0", t0)
	create(t, s, run, m0)

	// Others, and no one, are refused while a holds the run.
	changed := run
	changed.Status = store.Failed
	changed.Lease = store.Lease{}
	for _, owner := range []string{"b", ""} {
		checkLeaseError(t, fmt.Sprintf("Save as %q", owner), s.Save(t.Context(), owner, changed), "r", owner, run.Lease)
		checkLeaseError(t, fmt.Sprintf("Append as %q", owner), s.Append(t.Context(), "r", store.Lease{Owner: owner}, message("x", t0)), "r", owner, run.Lease)
		checkLeaseError(t, fmt.Sprintf("Append of nothing as %q", owner), s.Append(t.Context(), "r", store.Lease{Owner: owner}), "r", owner, run.Lease)
	}
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after refused writes mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0), opts); diff != "" {
		t.Errorf("Entries after refused writes mismatch (-got +want):\n%s", diff)
	}

	// The holder writes.
	m1 := message("m1", t0)
	appendAs(t, s, "r", "a", m1)
	run.Status = store.Done
	run.Updated = at(time.Hour)
	save(t, s, "a", run)
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after the holder's Save mismatch (-got +want):\n%s", diff)
	}

	// The holder releases the run; then it is a former owner, refused,
	// and "" writes.
	run.Lease = store.Lease{}
	save(t, s, "a", run)
	if got := load(t, c, "r").Lease; got != (store.Lease{}) {
		t.Errorf("Lease after a release = %+v, want none", got)
	}
	checkLeaseError(t, "Save by the former owner", s.Save(t.Context(), "a", run), "r", "a", store.Lease{})
	checkLeaseError(t, "Append by the former owner", s.Append(t.Context(), "r", store.Lease{Owner: "a"}, message("x", t0)), "r", "a", store.Lease{})
	m2 := message("m2", t0)
	appendEntries(t, s, "r", m2)
	run.Error = "by no one"
	save(t, s, "", run)
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after a Save by no one mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0, m1, m2), opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}

	// A released run is free to acquire.
	acquire(t, s, "r", store.Lease{Owner: "b", Expires: at(time.Minute)}, t0)

	// Unknown runs are not found, whoever asks.
	for _, owner := range []string{"", "a"} {
		if err := s.Save(t.Context(), owner, store.Run{ID: "unknown"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Save(unknown) as %q: error = %v, want ErrNotFound", owner, err)
		}
		if err := s.Append(t.Context(), "unknown", store.Lease{Owner: owner}, m0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Append(unknown) as %q: error = %v, want ErrNotFound", owner, err)
		}
		if err := s.Acquire(t.Context(), "unknown", store.Lease{Owner: owner, Expires: at(time.Minute)}, t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Acquire(unknown) for %q: error = %v, want ErrNotFound", owner, err)
		}
	}
}

func testAcquire(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	m0 := message("m0", t0)
	create(t, s, run, m0)
	checkLease := func(what string, want store.Lease) {
		t.Helper()
		got := load(t, c, "r")
		if diff := cmp.Diff(got.Lease, want); diff != "" {
			t.Errorf("Lease after %s mismatch (-got +want):\n%s", what, diff)
		}
		checkUTC(t, "Lease.Expires", got.Lease.Expires)
	}

	// A free run; times in t0's zone come back in UTC.
	la := store.Lease{Owner: "a", Expires: at(time.Minute)}
	acquire(t, s, "r", la, t0)
	checkLease("Acquire of a free run", la)

	// Others are refused until the lease expires, to the nanosecond.
	for _, now := range []time.Time{at(-time.Hour), t0, at(time.Minute - time.Nanosecond)} {
		err := s.Acquire(t.Context(), "r", store.Lease{Owner: "b", Expires: at(time.Hour)}, now)
		checkLeaseError(t, fmt.Sprintf("Acquire by b at %v", now), err, "r", "b", la)
	}
	checkLease("refused Acquires", la)

	// The holder renews, before or after its lease expired.
	la = store.Lease{Owner: "a", Expires: at(2 * time.Minute)}
	acquire(t, s, "r", la, at(30*time.Second))
	checkLease("a renewal", la)
	checkLeaseError(t, "Acquire by b before the renewed lease expired",
		s.Acquire(t.Context(), "r", store.Lease{Owner: "b", Expires: at(time.Hour)}, at(time.Minute)), "r", "b", la)
	la = store.Lease{Owner: "a", Expires: at(3 * time.Minute)}
	acquire(t, s, "r", la, at(2*time.Minute+time.Second))
	checkLease("a renewal after expiry", la)

	// Another takes the run over at the instant the lease expires.
	lb := store.Lease{Owner: "b", Expires: time.Date(2030, 1, 1, 0, 0, 0, 1, time.FixedZone("x", -3600))}
	acquire(t, s, "r", lb, at(3*time.Minute).In(time.UTC))
	checkLease("a takeover", lb)

	// a has lost the run: its writes and its renewal are refused.
	checkLeaseError(t, "Append by the former holder", s.Append(t.Context(), "r", store.Lease{Owner: "a"}, message("late", t0)), "r", "a", lb)
	checkLeaseError(t, "Save by the former holder", s.Save(t.Context(), "a", run), "r", "a", lb)
	checkLeaseError(t, "renewal by the former holder",
		s.Acquire(t.Context(), "r", store.Lease{Owner: "a", Expires: at(time.Hour)}, at(3*time.Minute)), "r", "a", lb)

	// Acquire changes the lease only; b writes.
	want := run
	want.Lease = lb
	if diff := cmp.Diff(load(t, c, "r"), utc(want), opts); diff != "" {
		t.Errorf("Load after Acquires mismatch (-got +want):\n%s", diff)
	}
	m1 := message("m1", t0)
	appendAs(t, s, "r", "b", m1)
	want.Status = store.Done
	save(t, s, "b", want)
	if diff := cmp.Diff(load(t, c, "r"), utc(want), opts); diff != "" {
		t.Errorf("Load after the new holder's Save mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0, m1), opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
}

func testAcquireRace(t *testing.T, s store.Store, c store.Catalog) {
	for _, tt := range []struct {
		name string
		held store.Lease
	}{
		{"free", store.Lease{}},
		{"expired", store.Lease{Owner: "crashed", Expires: at(-time.Second)}},
		{"expiring now", store.Lease{Owner: "crashed", Expires: t0}},
	} {
		for round := range 3 {
			id := fmt.Sprint(tt.name, "-", round)
			run := sampleRun(id)
			run.Lease = tt.held
			create(t, s, run)
			lease := func(g int) store.Lease {
				return store.Lease{Owner: fmt.Sprint("racer-", g), Expires: at(time.Hour)}
			}
			errs := race(concurrency, func(g int) error {
				return s.Acquire(t.Context(), id, lease(g), t0)
			})
			g := winner(t, "Acquire "+id, errs, store.ErrLeased)
			if g < 0 {
				continue
			}
			for h, err := range errs {
				if h != g {
					checkLeaseError(t, fmt.Sprintf("Acquire %s by racer %d", id, h), err, id, lease(h).Owner, lease(g))
				}
			}
			if diff := cmp.Diff(load(t, c, id).Lease, lease(g)); diff != "" {
				t.Errorf("Lease of %s mismatch, want the winner's (-got +want):\n%s", id, diff)
			}
		}
	}
}

// testRenewal: the holder's writes renew its lease as an Acquire would,
// and none of its writes shortens it; a write refused changes nothing.
func testRenewal(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Lease = store.Lease{Owner: "a", Expires: at(time.Minute)}
	create(t, s, run)
	checkLease := func(what string, want store.Lease) {
		t.Helper()
		got := load(t, c, "r").Lease
		if diff := cmp.Diff(got, utc(store.Run{Lease: want}).Lease); diff != "" {
			t.Errorf("Lease after %s mismatch (-got +want):\n%s", what, diff)
		}
		checkUTC(t, what+": Lease.Expires", got.Expires)
	}

	// An Append renews the lease to its expiry, to the nanosecond.
	m1, m2, m3 := message("m1", t0), message("m2", t0), message("m3", t0)
	renewed := store.Lease{Owner: "a", Expires: at(2*time.Minute + time.Nanosecond)}
	if err := s.Append(t.Context(), "r", renewed, m1); err != nil {
		t.Fatalf("Append renewing the lease: %v", err)
	}
	checkLease("an Append renewing it", renewed)
	checkLeaseError(t, "Acquire by b before the lease an Append renewed expired",
		s.Acquire(t.Context(), "r", store.Lease{Owner: "b", Expires: at(time.Hour)}, at(2*time.Minute)), "r", "b", renewed)

	// An earlier expiry, or none, leaves it: a write sent before another
	// and landing after it does not undo the other's renewal.
	for _, l := range []store.Lease{{Owner: "a", Expires: at(time.Minute)}, {Owner: "a"}} {
		if err := s.Append(t.Context(), "r", l, m2); err != nil {
			t.Fatalf("Append with lease %+v: %v", l, err)
		}
		checkLease(fmt.Sprintf("an Append with lease %+v", l), renewed)
	}
	acquire(t, s, "r", store.Lease{Owner: "a", Expires: at(time.Minute)}, at(30*time.Second))
	checkLease("an Acquire renewing it to an earlier expiry", renewed)
	kept := run
	kept.Lease = store.Lease{Owner: "a", Expires: at(time.Minute)}
	save(t, s, "a", kept)
	checkLease("a Save keeping it to an earlier expiry", renewed)

	// Refused, an Append renews nothing; the lease taken over, the
	// former holder's writes do not touch it.
	checkLeaseError(t, "Append by b", s.Append(t.Context(), "r", store.Lease{Owner: "b", Expires: at(time.Hour)}, m3), "r", "b", renewed)
	checkLease("an Append refused", renewed)
	lb := store.Lease{Owner: "b", Expires: at(3 * time.Minute)}
	acquire(t, s, "r", lb, renewed.Expires)
	checkLeaseError(t, "Append by the former holder", s.Append(t.Context(), "r", store.Lease{Owner: "a", Expires: at(time.Hour)}, m3), "r", "a", lb)
	checkLease("the former holder's Append", lb)

	// A Save gives the lease up, whatever its expiry was.
	released := kept
	released.Lease = store.Lease{}
	save(t, s, "b", released)
	checkLease("a release", store.Lease{})
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m1, m2, m2), opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
}

// testSaveEntries: a Save with entries appends them to the journal,
// numbered on from its last Seq, together with the run: a Save refused
// appends nothing.
func testSaveEntries(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Lease = store.Lease{Owner: "a", Expires: at(time.Minute)}
	m0, m1 := message("m0", t0), message("m1", t0)
	create(t, s, run, m0)
	appendAs(t, s, "r", "a", m1)

	end := store.Entry{Type: store.EntryEnd, Data: json.RawMessage(`{"usage":{}}`), Time: at(time.Second)}
	done := run
	done.Status, done.Lease = store.Done, store.Lease{}
	checkLeaseError(t, "Save with entries by b", s.Save(t.Context(), "b", done, end), "r", "b", run.Lease)
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0, m1), opts); diff != "" {
		t.Errorf("Entries after a refused Save mismatch (-got +want):\n%s", diff)
	}
	if err := s.Save(t.Context(), "a", done, end); err != nil {
		t.Fatalf("Save with entries: %v", err)
	}
	if diff := cmp.Diff(load(t, c, "r"), utc(done), opts); diff != "" {
		t.Errorf("Load after a Save with entries mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0, m1, end), opts); diff != "" {
		t.Errorf("Entries after a Save with entries mismatch (-got +want):\n%s", diff)
	}
	// The run is no one's now; a Save by no one appends too, and an
	// unknown run is not found.
	m2 := message("m2", t0)
	save(t, s, "", done)
	if err := s.Save(t.Context(), "", done, m2); err != nil {
		t.Fatalf("Save with entries by no one: %v", err)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(m0, m1, end, m2), opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
	if err := s.Save(t.Context(), "", store.Run{ID: "unknown"}, m2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Save(unknown) with entries: error = %v, want ErrNotFound", err)
	}
}
