package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

// Run runs the conformance suite, one subtest per behaviour. Each subtest
// calls open for a new, empty store; open reports its own failures with
// t.Fatal and registers with t.Cleanup whatever closes or removes the
// store. Store and Catalog are usually the same value.
func Run(t *testing.T, open func(t *testing.T) (store.Store, store.Catalog)) {
	t.Helper()
	for _, tt := range []struct {
		name string
		test func(t *testing.T, s store.Store, c store.Catalog)
	}{
		{"CreateLoad", testCreateLoad},
		{"Create", testCreate},
		{"CreateAtomic", testCreateAtomic},
		{"CreateRace", testCreateRace},
		{"SaveReplaces", testSaveReplaces},
		{"SaveUnknown", testSaveUnknown},
		{"LoadUnknown", testLoadUnknown},
		{"AppendUnknown", testAppendUnknown},
		{"AppendSeq", testAppendSeq},
		{"EntriesAfter", testEntriesAfter},
		{"EntriesUnknown", testEntriesUnknown},
		{"EntriesBreak", testEntriesBreak},
		{"AppendAtomic", testAppendAtomic},
		{"Copies", testCopies},
		{"Times", testTimes},
		{"RunsOrder", testRunsOrder},
		{"ConcurrentRuns", testConcurrentRuns},
		{"ConcurrentAppend", testConcurrentAppend},
		{"Fork", testFork},
		{"ForkFailed", testForkFailed},
		{"ForkErrors", testForkErrors},
		{"ForkRace", testForkRace},
		{"Fencing", testFencing},
		{"Acquire", testAcquire},
		{"AcquireRace", testAcquireRace},
		{"Renewal", testRenewal},
		{"SaveEntries", testSaveEntries},
		{"Strings", testStrings},
		{"LargeData", testLargeData},
		{"JSONBytes", testJSONBytes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, c := open(t)
			tt.test(t, s, c)
		})
	}
}

// opts compares runs and entries: times by instant (time.Time.Equal, which
// cmp uses), and a nil Spec or Data like an empty one.
var opts = cmp.Options{cmpopts.EquateEmpty()}

// t0 is a time with nanoseconds in a zone other than UTC, to check that
// times keep their instant and come back in UTC.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+5:30", 5*3600+1800))

func at(d time.Duration) time.Time { return t0.Add(d) }

func sampleRun(id string) store.Run {
	return store.Run{
		ID:       id,
		Kind:     "loop",
		Idea:     "ideas/" + id + ".json",
		Model:    "scripted:test",
		Status:   store.Running,
		Error:    "",
		Usage:    provider.Usage{Input: 1, Output: 2, Thinking: 3, CacheRead: 4, CacheWrite: 5},
		Parent:   "",
		ForkedAt: 0,
		Spec:     json.RawMessage(`{"schema":{"type":"object"},"max":3}`),
		Created:  t0,
		Updated:  at(time.Second),
	}
}

// utc returns run as a store gives it back.
func utc(run store.Run) store.Run {
	run.Created, run.Updated = run.Created.UTC(), run.Updated.UTC()
	run.Lease.Expires = run.Lease.Expires.UTC()
	return run
}

func create(t *testing.T, s store.Store, run store.Run, entries ...store.Entry) {
	t.Helper()
	if err := s.Create(t.Context(), run, entries...); err != nil {
		t.Fatalf("Create(%q): %v", run.ID, err)
	}
}

// save saves run for owner.
func save(t *testing.T, s store.Store, owner string, run store.Run) {
	t.Helper()
	if err := s.Save(t.Context(), owner, run); err != nil {
		t.Fatalf("Save(%q) as %q: %v", run.ID, owner, err)
	}
}

// appendEntries appends to run id, which no one holds.
func appendEntries(t *testing.T, s store.Store, id string, entries ...store.Entry) {
	t.Helper()
	appendAs(t, s, id, "", entries...)
}

func appendAs(t *testing.T, s store.Store, id, owner string, entries ...store.Entry) {
	t.Helper()
	if err := s.Append(t.Context(), id, store.Lease{Owner: owner}, entries...); err != nil {
		t.Fatalf("Append(%q) as %q: %v", id, owner, err)
	}
}

func load(t *testing.T, c store.Catalog, id string) store.Run {
	t.Helper()
	run, err := c.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return run
}

// collect walks seq to its end and fails t on an error.
func collect[T any](t *testing.T, seq iter.Seq2[T, error]) []T {
	t.Helper()
	var all []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("walk: %v", err)
		}
		all = append(all, v)
	}
	return all
}

func entries(t *testing.T, s store.Store, id string, after int64) []store.Entry {
	t.Helper()
	return collect(t, s.Entries(t.Context(), id, after))
}

// message returns a message entry whose Data is {"text":text}.
func message(text string, tm time.Time) store.Entry {
	data, _ := json.Marshal(map[string]string{"text": text})
	return store.Entry{Type: store.EntryMessage, Data: data, Time: tm}
}

// numbered returns entries numbered from 1, with times in UTC, as a store
// gives back what was appended.
func numbered(entries ...store.Entry) []store.Entry {
	out := make([]store.Entry, len(entries))
	for i, e := range entries {
		e.Seq = int64(i + 1)
		e.Time = e.Time.UTC()
		out[i] = e
	}
	return out
}

func checkUTC(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, tm.Location())
	}
}

func testCreateLoad(t *testing.T, s store.Store, c store.Catalog) {
	full := sampleRun("full")
	full.Status = store.Failed
	full.Error = "limit: 3 steps"
	full.Parent = "parent"
	full.ForkedAt = 42
	full.Lease = store.Lease{Owner: "host/42", Expires: at(time.Minute)}
	bare := store.Run{ID: "bare"}
	for _, run := range []store.Run{full, bare} {
		create(t, s, run)
	}
	for _, want := range []store.Run{full, bare} {
		got := load(t, c, want.ID)
		if diff := cmp.Diff(got, utc(want), opts); diff != "" {
			t.Errorf("Load(%s) mismatch (-got +want):\n%s", want.ID, diff)
		}
		if !bytes.Equal(got.Spec, want.Spec) {
			t.Errorf("Load(%s).Spec = %q, want %q", want.ID, got.Spec, want.Spec)
		}
		checkUTC(t, "Created", got.Created)
		checkUTC(t, "Updated", got.Updated)
		checkUTC(t, "Lease.Expires", got.Lease.Expires)
	}
}

func testSaveReplaces(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	e := message("hello", t0)
	create(t, s, run, e)

	run.Kind = "plan"
	run.Idea = "other.json"
	run.Status = store.Done
	run.Usage = provider.Usage{Input: 10, Output: 20, Thinking: 30, CacheRead: 40, CacheWrite: 50}
	run.Error = "none"
	run.Model = "other:model"
	run.Parent = "p"
	run.ForkedAt = 9
	run.Spec = json.RawMessage(`{"replaced":true}`)
	run.Created = at(-time.Hour)
	run.Updated = at(time.Hour)
	run.Lease = store.Lease{Owner: "host/1", Expires: at(2 * time.Hour)}
	save(t, s, "", run)

	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after Save mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(e), opts); diff != "" {
		t.Errorf("Entries after Save mismatch (-got +want):\n%s", diff)
	}

	// The lease Save set holds the run; a nil Spec replaces one.
	run.Spec = nil
	save(t, s, "host/1", run)
	if diff := cmp.Diff(load(t, c, "r"), utc(run), opts); diff != "" {
		t.Errorf("Load after a second Save mismatch (-got +want):\n%s", diff)
	}
	if got := collect(t, c.Runs(t.Context())); len(got) != 1 {
		t.Errorf("Runs after two Saves of one run gave %d runs, want 1", len(got))
	}
}

func testSaveUnknown(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("known"))
	for _, owner := range []string{"", "host/1"} {
		if err := s.Save(t.Context(), owner, sampleRun("unknown")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Save(unknown) as %q: error = %v, want ErrNotFound", owner, err)
		}
	}
	// Save does not create.
	if _, err := c.Load(t.Context(), "unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load after Save(unknown) error = %v, want ErrNotFound", err)
	}
}

func testLoadUnknown(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("known"))
	if _, err := c.Load(t.Context(), "unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load(unknown) error = %v, want ErrNotFound", err)
	}
}

func testAppendUnknown(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("known"))
	if err := s.Append(t.Context(), "unknown", store.Lease{Owner: ""}, message("x", t0)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Append(unknown) error = %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), "unknown", store.Lease{Owner: ""}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Append(unknown) of no entries: error = %v, want ErrNotFound", err)
	}
	if _, err := c.Load(t.Context(), "unknown"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load after Append(unknown) error = %v, want ErrNotFound", err)
	}
}

func testAppendSeq(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("r"))
	e1 := message("one", t0)
	e1.Seq = 99
	e2 := store.Entry{Seq: 0, Type: store.EntryStarted, Call: "call-1", Data: json.RawMessage(`{"tool":"x"}`), Time: at(time.Millisecond)}
	e3 := store.Entry{Seq: -5, Type: store.EntrySettled, Call: "call-1", Data: json.RawMessage(`{}`), Time: at(2 * time.Millisecond)}
	e4 := store.Entry{Seq: 1, Type: store.EntrySolution, Call: "1", Data: json.RawMessage(`{"output":1}`), Time: at(3 * time.Millisecond)}
	e5 := store.Entry{Type: store.EntryUsage, Call: "1", Data: json.RawMessage(`{"input":7,"output":8}`), Time: at(4 * time.Millisecond)}
	e6 := store.Entry{Type: store.EntryStatus, Data: json.RawMessage(`{"status":"failed","error":"limit"}`), Time: at(5 * time.Millisecond)}
	appendEntries(t, s, "r", e1, e2)
	appendEntries(t, s, "r") // no entries: changes nothing
	appendEntries(t, s, "r", e3)
	appendEntries(t, s, "r", e4, e5)
	appendEntries(t, s, "r", e6)

	want := numbered(e1, e2, e3, e4, e5, e6)
	if diff := cmp.Diff(entries(t, s, "r", 0), want, opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
}

func testEntriesAfter(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("r"))
	var all []store.Entry
	for i := range 5 {
		all = append(all, message(fmt.Sprint(i), at(time.Duration(i)*time.Second)))
	}
	appendEntries(t, s, "r", all...)
	want := numbered(all...)
	for _, tt := range []struct {
		after int64
		want  []store.Entry
	}{
		{-1, want},
		{0, want},
		{2, want[2:]},
		{4, want[4:]},
		{5, nil},
		{99, nil},
	} {
		if diff := cmp.Diff(entries(t, s, "r", tt.after), tt.want, opts); diff != "" {
			t.Errorf("Entries(after %d) mismatch (-got +want):\n%s", tt.after, diff)
		}
	}
}

func testEntriesUnknown(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("known"))
	var errs []error
	for e, err := range s.Entries(t.Context(), "unknown", 0) {
		if err == nil {
			t.Errorf("Entries(unknown) yielded entry %+v", e)
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], store.ErrNotFound) {
		t.Errorf("Entries(unknown) errors = %v, want one ErrNotFound", errs)
	}
	// A created run with an empty journal is not unknown.
	if got := entries(t, s, "known", 0); len(got) != 0 {
		t.Errorf("Entries of an empty journal = %v, want none", got)
	}
}

func testEntriesBreak(t *testing.T, s store.Store, c store.Catalog) {
	// A store that leaked a connection or a lock on each early break
	// would hang before the end; fail instead.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	create(t, s, sampleRun("r"))
	var all []store.Entry
	for i := range 10 {
		all = append(all, message(fmt.Sprint(i), t0))
	}
	appendEntries(t, s, "r", all...)
	for i := range 40 {
		n := 0
		for _, err := range s.Entries(ctx, "r", 0) {
			if err != nil {
				t.Fatalf("Entries: %v", err)
			}
			n++
			if n == 2 {
				break
			}
		}
		if n != 2 {
			t.Fatalf("Entries gave %d entries before the break, want 2", n)
		}
		if err := s.Append(ctx, "r", store.Lease{Owner: ""}, message(fmt.Sprint("more ", i), t0)); err != nil {
			t.Fatalf("Append after a break: %v", err)
		}
		for range c.Runs(ctx) {
			break
		}
	}
	if got := collect(t, s.Entries(ctx, "r", 0)); len(got) != 50 {
		t.Errorf("Entries after the breaks gave %d entries, want 50", len(got))
	}
	if _, err := c.Load(ctx, "r"); err != nil {
		t.Errorf("Load after the breaks: %v", err)
	}
}

func testAppendAtomic(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("r"))
	first := message("first", t0)
	appendEntries(t, s, "r", first)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := s.Append(ctx, "r", store.Lease{Owner: ""}, message("a", t0), message("b", t0), message("c", t0))
	if err == nil {
		t.Errorf("Append with a cancelled ctx returned nil")
	}
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(first), opts); diff != "" {
		t.Errorf("Entries after a cancelled Append mismatch (-got +want):\n%s", diff)
	}
	// The store is still usable, and numbering goes on where it was.
	second := message("second", t0)
	appendEntries(t, s, "r", second)
	if diff := cmp.Diff(entries(t, s, "r", 0), numbered(first, second), opts); diff != "" {
		t.Errorf("Entries after the next Append mismatch (-got +want):\n%s", diff)
	}
}

func testCopies(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	spec := []byte(`{"spec":1}`)
	run.Spec = spec
	first := []byte(`{"text":"first"}`)
	create(t, s, run, store.Entry{Type: store.EntryMessage, Data: first, Time: t0})
	copy(spec, `{"SPEC":2}`)
	copy(first, `{"TEXT":"FIRST"}`)

	buf := []byte(`{"text":"original"}`)
	appendEntries(t, s, "r", store.Entry{Type: store.EntryMessage, Data: buf, Time: t0})
	copy(buf, `{"TEXT":"mutated!"}`)

	got := load(t, c, "r")
	if string(got.Spec) != `{"spec":1}` {
		t.Errorf("Spec after the caller changed its buffer = %s, want {\"spec\":1}", got.Spec)
	}
	copy(got.Spec, `{"SPEC":3}`)
	if got := load(t, c, "r"); string(got.Spec) != `{"spec":1}` {
		t.Errorf("Spec after the caller changed a loaded one = %s, want {\"spec\":1}", got.Spec)
	}

	want := []string{`{"text":"first"}`, `{"text":"original"}`}
	data := func(es []store.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, string(e.Data))
		}
		return out
	}
	es := entries(t, s, "r", 0)
	if diff := cmp.Diff(data(es), want); diff != "" {
		t.Fatalf("Data after the caller changed its buffers mismatch (-got +want):\n%s", diff)
	}
	copy(es[0].Data, `{"TEXT":"FIRST"}`)
	copy(es[1].Data, `{"TEXT":"mutated!"}`)
	if diff := cmp.Diff(data(entries(t, s, "r", 0)), want); diff != "" {
		t.Errorf("Data after the caller changed read ones mismatch (-got +want):\n%s", diff)
	}

	spec = []byte(`{"saved":1}`)
	run.Spec = spec
	save(t, s, "", run)
	copy(spec, `{"SAVED":2}`)
	if got := load(t, c, "r"); string(got.Spec) != `{"saved":1}` {
		t.Errorf("Spec after the caller changed a saved buffer = %s, want {\"saved\":1}", got.Spec)
	}
}

func testTimes(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Created = time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.FixedZone("west", -7*3600))
	run.Updated = time.Date(2024, 3, 1, 0, 0, 0, 1, time.Local)
	run.Lease = store.Lease{Owner: "o", Expires: time.Date(2024, 12, 31, 23, 59, 59, 1, time.FixedZone("far", 14*3600))}
	create(t, s, run)
	got := load(t, c, "r")
	for _, tt := range []struct {
		name      string
		got, want time.Time
	}{
		{"Created", got.Created, run.Created},
		{"Updated", got.Updated, run.Updated},
		{"Lease.Expires", got.Lease.Expires, run.Lease.Expires},
	} {
		if !tt.got.Equal(tt.want) {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
		checkUTC(t, tt.name, tt.got)
	}

	withNanos := message("nanos", time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("east", 9*3600)))
	zero := message("zero", time.Time{})
	appendAs(t, s, "r", "o", withNanos, zero)
	es := entries(t, s, "r", 0)
	if len(es) != 2 {
		t.Fatalf("Entries gave %d entries, want 2", len(es))
	}
	if !es[0].Time.Equal(withNanos.Time) {
		t.Errorf("Entry time = %v, want %v", es[0].Time, withNanos.Time)
	}
	checkUTC(t, "Entry time", es[0].Time)
	if !es[1].Time.IsZero() {
		t.Errorf("zero Entry time came back as %v", es[1].Time)
	}
}

func testRunsOrder(t *testing.T, s store.Store, c store.Catalog) {
	for _, tt := range []struct {
		id      string
		created time.Time
	}{
		{"old", at(-time.Hour)},
		{"b", t0},
		{"newest", at(time.Hour)},
		{"a", t0},
		{"zero", time.Time{}},
		{"c", at(time.Nanosecond)},
	} {
		run := sampleRun(tt.id)
		run.Created = tt.created
		create(t, s, run)
	}
	var ids []string
	for _, run := range collect(t, c.Runs(t.Context())) {
		ids = append(ids, run.ID)
	}
	want := []string{"newest", "c", "a", "b", "old", "zero"}
	if diff := cmp.Diff(ids, want); diff != "" {
		t.Errorf("Runs order mismatch (-got +want):\n%s", diff)
	}
	want0 := sampleRun("newest")
	want0.Created = at(time.Hour)
	for run, err := range c.Runs(t.Context()) {
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		if diff := cmp.Diff(run, utc(want0), opts); diff != "" {
			t.Errorf("first of Runs mismatch (-got +want):\n%s", diff)
		}
		break
	}
}

// concurrency is how many goroutines the concurrent tests run, and
// appends how many Appends each makes.
const (
	concurrency = 8
	appends     = 25
)

func testConcurrentRuns(t *testing.T, s store.Store, c store.Catalog) {
	for g := range concurrency {
		create(t, s, sampleRun(fmt.Sprint("run-", g)))
	}
	var wg sync.WaitGroup
	for g := range concurrency {
		wg.Go(func() {
			id := fmt.Sprint("run-", g)
			for i := range appends {
				if err := s.Append(t.Context(), id, store.Lease{Owner: ""}, message(fmt.Sprint(g, "/", i), t0)); err != nil {
					t.Errorf("Append(%s): %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range concurrency {
		id := fmt.Sprint("run-", g)
		var want []store.Entry
		for i := range appends {
			want = append(want, message(fmt.Sprint(g, "/", i), t0))
		}
		if diff := cmp.Diff(entries(t, s, id, 0), numbered(want...), opts); diff != "" {
			t.Errorf("Entries(%s) mismatch (-got +want):\n%s", id, diff)
		}
	}
}

func testConcurrentAppend(t *testing.T, s store.Store, c store.Catalog) {
	run := sampleRun("r")
	run.Lease = store.Lease{Owner: "writer", Expires: at(time.Hour)}
	create(t, s, run)
	var wg sync.WaitGroup
	for g := range concurrency {
		wg.Go(func() {
			for i := range appends {
				if err := s.Append(t.Context(), "r", store.Lease{Owner: "writer"}, pair(fmt.Sprint(g), i)...); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkPairs(t, entries(t, s, "r", 0), concurrency, appends)
}

// pair returns the two entries of Append i of writer, which must stay
// together in the journal.
func pair(writer string, i int) []store.Entry {
	return []store.Entry{
		message(fmt.Sprint(writer, "/", i, "/a"), t0),
		message(fmt.Sprint(writer, "/", i, "/b"), t0),
	}
}

// checkPairs checks a journal written by writers each appending appends
// pairs: numbered from 1, each pair whole, each writer's in order.
func checkPairs(t *testing.T, es []store.Entry, writers, appends int) {
	t.Helper()
	if len(es) != 2*writers*appends {
		t.Fatalf("Entries gave %d entries, want %d", len(es), 2*writers*appends)
	}
	next := make(map[string]int) // the next i expected from each writer
	for k, e := range es {
		if e.Seq != int64(k+1) {
			t.Fatalf("entry %d has Seq %d, want %d", k, e.Seq, k+1)
		}
		if k%2 == 1 {
			continue
		}
		var text struct{ Text string }
		if err := json.Unmarshal(e.Data, &text); err != nil {
			t.Fatalf("entry %d: %v", e.Seq, err)
		}
		rest, ok := strings.CutSuffix(text.Text, "/a")
		slash := strings.LastIndexByte(rest, '/')
		i, err := strconv.Atoi(rest[slash+1:])
		if !ok || slash < 0 || err != nil {
			t.Fatalf("entry %d is %s, want the first of an Append", e.Seq, e.Data)
		}
		writer := rest[:slash]
		if want := pair(writer, i)[1].Data; !bytes.Equal(es[k+1].Data, want) {
			t.Errorf("entry %d is %s, want %s right after %s", es[k+1].Seq, es[k+1].Data, want, e.Data)
		}
		if i != next[writer] {
			t.Errorf("entry %d is Append %d of writer %s, want %d", e.Seq, i, writer, next[writer])
		}
		next[writer] = i + 1
	}
	if len(next) != writers {
		t.Errorf("the journal has Appends of %d writers, want %d", len(next), writers)
	}
}

// forkParent creates run "parent", held by host/7, with this journal,
// written as a run writes it: a call's messages (with their _call), then
// its settled entry (with no data: the call succeeded), in one Append.
//
//	1 message m0        log index 0
//	2 started A
//	3 message m1        log index 1, A's result
//	4 settled A
//	5 started B
//	6 started C
//	7 solution 1
//	8 message m2        log index 2, B's result
//	9 settled B
//	10 message m3       log index 3, C's result
//	11 settled C
//	12 message m4       log index 4
//	13 end
func forkParent(t *testing.T, s store.Store) (store.Run, []store.Entry) {
	t.Helper()
	parent := sampleRun("parent")
	parent.Status = store.Done
	parent.Error = "parent error"
	parent.Parent = "grandparent"
	parent.ForkedAt = 7
	parent.Lease = store.Lease{Owner: "host/7", Expires: at(time.Hour)}
	call := func(typ store.EntryType, call string, sec int) store.Entry {
		return store.Entry{Type: typ, Call: call, Data: json.RawMessage(`{"call":"` + call + `"}`), Time: at(time.Duration(sec) * time.Second)}
	}
	settled := func(call string, sec int) store.Entry {
		return store.Entry{Type: store.EntrySettled, Call: call, Time: at(time.Duration(sec) * time.Second)}
	}
	output := func(text, call string, sec int) store.Entry {
		return store.Entry{Type: store.EntryMessage, Data: json.RawMessage(`{"text":"` + text + `","_call":{"call":"` + call + `"}}`), Time: at(time.Duration(sec) * time.Second)}
	}
	journal := []store.Entry{
		message("m0", at(1*time.Second)),
		call(store.EntryStarted, "A", 2),
		output("m1", "A", 3),
		settled("A", 4),
		call(store.EntryStarted, "B", 5),
		call(store.EntryStarted, "C", 6),
		call(store.EntrySolution, "1", 7),
		output("m2", "B", 8),
		settled("B", 9),
		output("m3", "C", 10),
		settled("C", 11),
		message("m4", at(12*time.Second)),
		{Type: store.EntryEnd, Time: at(13 * time.Second)},
	}
	// Several Appends, as a run makes many.
	create(t, s, parent, journal[:2]...)
	appendAs(t, s, "parent", "host/7", journal[2:4]...)
	appendAs(t, s, "parent", "host/7", journal[4:]...)
	return parent, numbered(journal...)
}

func testFork(t *testing.T, s store.Store, c store.Catalog) {
	parent, journal := forkParent(t, s)
	pick := func(seqs ...int) []store.Entry {
		var out []store.Entry
		for _, seq := range seqs {
			out = append(out, journal[seq-1])
		}
		return numbered(out...)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	// A fork keeps the entries up to the next message (or the end), less
	// the started entries of calls not settled among them. No one holds
	// it, though its parent is held.
	for _, tt := range []struct {
		at       int
		forkedAt int64
		want     []store.Entry
	}{
		{0, 1, pick(1)},
		{1, 3, pick(1, 2, 3, 4, 7)},
		{2, 8, pick(1, 2, 3, 4, 5, 7, 8, 9)},
		{3, 10, pick(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{4, 12, pick(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)},
	} {
		newID := fmt.Sprint("fork-", tt.at)
		got, err := store.Fork(t.Context(), s, c, "parent", tt.at, newID, now)
		if err != nil {
			t.Fatalf("Fork at %d: %v", tt.at, err)
		}
		want := store.Run{
			ID:       newID,
			Kind:     parent.Kind,
			Idea:     parent.Idea,
			Model:    parent.Model,
			Status:   store.Interrupted,
			Parent:   "parent",
			ForkedAt: tt.forkedAt,
			Spec:     parent.Spec,
			Created:  now,
			Updated:  now,
		}
		if diff := cmp.Diff(got, want, opts); diff != "" {
			t.Errorf("Fork at %d returned (-got +want):\n%s", tt.at, diff)
		}
		if diff := cmp.Diff(load(t, c, newID), utc(want), opts); diff != "" {
			t.Errorf("Load of the fork at %d mismatch (-got +want):\n%s", tt.at, diff)
		}
		if diff := cmp.Diff(entries(t, s, newID, 0), tt.want, opts); diff != "" {
			t.Errorf("Entries of the fork at %d mismatch (-got +want):\n%s", tt.at, diff)
		}
	}

	// The parent is as it was.
	if diff := cmp.Diff(load(t, c, "parent"), utc(parent), opts); diff != "" {
		t.Errorf("parent after forking mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "parent", 0), journal, opts); diff != "" {
		t.Errorf("parent journal after forking mismatch (-got +want):\n%s", diff)
	}

	// A fork forks again; ForkedAt counts in its own journal, where m1
	// is entry 3 as in the parent's.
	got, err := store.Fork(t.Context(), s, c, "fork-2", 1, "fork-2-1", now)
	if err != nil {
		t.Fatalf("Fork of a fork: %v", err)
	}
	if got.Parent != "fork-2" || got.ForkedAt != 3 {
		t.Errorf("Fork of a fork: Parent, ForkedAt = %q, %d, want fork-2, 3", got.Parent, got.ForkedAt)
	}
	if diff := cmp.Diff(entries(t, s, "fork-2-1", 0), pick(1, 2, 3, 4, 7), opts); diff != "" {
		t.Errorf("Entries of the fork of a fork mismatch (-got +want):\n%s", diff)
	}
}

// testForkFailed forks a run whose call B failed in the tick of A's
// message: B's settled entry holds its error message, which the run
// appends at the end of the tick. The fork at A's message leaves B's
// failure out, since it came after the message, so a resume runs B
// again; the fork at a message B wrote (its error branch) keeps B's.
func testForkFailed(t *testing.T, s store.Store, c store.Catalog) {
	entry := func(typ store.EntryType, call, data string, sec int) store.Entry {
		e := store.Entry{Type: typ, Call: call, Time: at(time.Duration(sec) * time.Second)}
		if data != "" {
			e.Data = json.RawMessage(data)
		}
		return e
	}
	journal := []store.Entry{
		message("m0", at(1*time.Second)),
		entry(store.EntryStarted, "A", `{"call":"A"}`, 2),
		entry(store.EntryStarted, "B", `{"call":"B"}`, 3),
		entry(store.EntryMessage, "", `{"text":"m1","_call":{"call":"A"}}`, 4),
		entry(store.EntrySettled, "A", "", 5),
		entry(store.EntryStarted, "C", `{"call":"C"}`, 6),
		entry(store.EntryMessage, "", `{"text":"m2","_call":{"call":"C"}}`, 7),
		entry(store.EntrySettled, "C", `{"type":"error","error":"C failed"}`, 8),
		entry(store.EntrySettled, "B", `{"type":"error","error":"B failed"}`, 9),
		entry(store.EntryMessage, "C", `{"type":"error","error":"C failed"}`, 10),
		entry(store.EntryMessage, "B", `{"type":"error","error":"B failed"}`, 11),
	}
	run := sampleRun("failing")
	create(t, s, run, journal...)
	journal = numbered(journal...)
	for _, tt := range []struct {
		at   int
		want []int // the seqs of the parent's entries the fork keeps
	}{
		{0, []int{1}},
		{1, []int{1, 2, 4, 5}},
		{2, []int{1, 2, 4, 5, 6, 7, 8}},
	} {
		id := fmt.Sprint("failing-", tt.at)
		if _, err := store.Fork(t.Context(), s, c, "failing", tt.at, id, t0); err != nil {
			t.Fatalf("Fork at %d: %v", tt.at, err)
		}
		var want []store.Entry
		for _, seq := range tt.want {
			want = append(want, journal[seq-1])
		}
		if diff := cmp.Diff(entries(t, s, id, 0), numbered(want...), opts); diff != "" {
			t.Errorf("Entries of the fork at %d mismatch (-got +want):\n%s", tt.at, diff)
		}
	}
}

func testForkErrors(t *testing.T, s store.Store, c store.Catalog) {
	parent, journal := forkParent(t, s)
	taken := sampleRun("taken")
	create(t, s, taken, message("mine", t0))
	create(t, s, store.Run{ID: "empty"})

	for _, tt := range []struct {
		name   string
		id     string
		at     int
		newID  string
		target error
	}{
		{"unknown parent", "unknown", 0, "new", store.ErrNotFound},
		{"taken id", "parent", 0, "taken", store.ErrExists},
		{"fork onto itself", "parent", 0, "parent", store.ErrExists},
		{"past the log", "parent", 5, "new", store.ErrRange},
		{"far past the log", "parent", 1000, "new", store.ErrRange},
		{"negative", "parent", -1, "new", store.ErrRange},
		{"empty log", "empty", 0, "new", store.ErrRange},
	} {
		_, err := store.Fork(t.Context(), s, c, tt.id, tt.at, tt.newID, t0)
		if !errors.Is(err, tt.target) {
			t.Errorf("%s: Fork(%s, %d, %s) error = %v, want %v", tt.name, tt.id, tt.at, tt.newID, err, tt.target)
		}
	}
	if _, err := c.Load(t.Context(), "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed Fork created its run: Load error = %v", err)
	}
	if diff := cmp.Diff(load(t, c, "taken"), utc(taken), opts); diff != "" {
		t.Errorf("run taken after a Fork onto it mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "taken", 0), numbered(message("mine", t0)), opts); diff != "" {
		t.Errorf("journal of taken after a Fork onto it mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(load(t, c, "parent"), utc(parent), opts); diff != "" {
		t.Errorf("parent after failed forks mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, "parent", 0), journal, opts); diff != "" {
		t.Errorf("parent journal after failed forks mismatch (-got +want):\n%s", diff)
	}
}

func testForkRace(t *testing.T, s store.Store, c store.Catalog) {
	_, journal := forkParent(t, s)
	// Forks at different messages race to one id: one wins whole.
	forkedAt := []int64{1, 3, 8, 10, 12}
	errs := race(concurrency, func(g int) error {
		_, err := store.Fork(t.Context(), s, c, "parent", g%len(forkedAt), "fork", t0)
		return err
	})
	g := winner(t, "Fork", errs, store.ErrExists)
	if g < 0 {
		return
	}
	want := forkedAt[g%len(forkedAt)]
	if got := load(t, c, "fork").ForkedAt; got != want {
		t.Errorf("ForkedAt of the fork = %d, want %d, the winner's", got, want)
	}
	if got := lastMessage(entries(t, s, "fork", 0)); !bytes.Equal(got.Data, journal[want-1].Data) {
		t.Errorf("last message of the fork = %s, want %s, the winner's", got.Data, journal[want-1].Data)
	}
}

// lastMessage returns the last message of es.
func lastMessage(es []store.Entry) store.Entry {
	for _, e := range slices.Backward(es) {
		if e.Type == store.EntryMessage {
			return e
		}
	}
	return store.Entry{}
}

// race calls f from n goroutines at once, f(0) to f(n-1), and returns
// what each returned.
func race(n int, f func(g int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			<-start
			errs[g] = f(g)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// winner returns the index of the only nil error of errs, and fails t
// unless there is exactly one, and every other error is target. It
// returns -1 when there is no winner.
func winner(t *testing.T, what string, errs []error, target error) int {
	t.Helper()
	won := -1
	for g, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("%s: racers %d and %d both won", what, won, g)
		case err == nil:
			won = g
		case !errors.Is(err, target):
			t.Errorf("%s: racer %d: error = %v, want %v", what, g, err, target)
		}
	}
	if won < 0 {
		t.Errorf("%s: no racer won", what)
	}
	return won
}

func testLargeData(t *testing.T, s store.Store, c store.Catalog) {
	create(t, s, sampleRun("r"))
	// A JSON string of 1 MiB, with every byte value a JSON string may
	// hold unescaped, so that no layer can shorten or re-encode it.
	var b strings.Builder
	b.WriteByte('"')
	for b.Len() < 1<<20-1 {
		for c := byte(0x20); c < 0x7f && b.Len() < 1<<20-1; c++ {
			if c != '"' && c != '\\' {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	large := store.Entry{Type: store.EntryMessage, Data: json.RawMessage(b.String()), Time: t0}
	small := message("after", t0)
	appendEntries(t, s, "r", large, small)
	es := entries(t, s, "r", 0)
	if len(es) != 2 {
		t.Fatalf("Entries gave %d entries, want 2", len(es))
	}
	if !bytes.Equal(es[0].Data, large.Data) {
		t.Errorf("1 MiB Data came back with %d bytes, not equal to what was appended", len(es[0].Data))
	}
	if !bytes.Equal(es[1].Data, small.Data) {
		t.Errorf("Data after the large entry = %s, want %s", es[1].Data, small.Data)
	}
}

func testJSONBytes(t *testing.T, s store.Store, c store.Catalog) {
	// JSON that a store decoding and re-encoding it would change: spacing,
	// key order, duplicate keys, number forms, escapes, raw UTF-8.
	odd := []string{
		`{"z": 1,  "a" :[1.0, 2e3, -0, 1E+2],"a":null}`,
		"{\n\t\"text\": \"caf\\u00e9 café 🌍 \\n \\\"q\\\" \\/\"\n}\n",
		`  [ ]  `,
		`"\u0000"`,
		`12345678901234567890123456789`,
	}
	run := sampleRun("r")
	run.Spec = json.RawMessage(odd[0])
	create(t, s, run)
	var in []store.Entry
	for _, o := range odd {
		in = append(in, store.Entry{Type: store.EntryMessage, Data: json.RawMessage(o), Time: t0})
	}
	appendEntries(t, s, "r", in...)
	if got := load(t, c, "r").Spec; string(got) != odd[0] {
		t.Errorf("Spec = %q, want %q", got, odd[0])
	}
	es := entries(t, s, "r", 0)
	if len(es) != len(odd) {
		t.Fatalf("Entries gave %d entries, want %d", len(es), len(odd))
	}
	for i, e := range es {
		if string(e.Data) != odd[i] {
			t.Errorf("Data of entry %d = %q, want %q", e.Seq, e.Data, odd[i])
		}
	}
}
