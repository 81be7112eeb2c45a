package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/store"
)

// odd is text a run may produce that a store must keep as it is: a NUL,
// bytes that are not UTF-8, text that looks like an escape to a database
// (bytea's \x, SQL quotes and backslashes) and UTF-8 that is valid.
const odd = "nul \x00 after; not UTF-8: \xff\xfe\xc3 \xed\xa0\x80; \\x41 '' \\\\; é 🌍"

func testStrings(t *testing.T, s store.Store, c store.Catalog) {
	// Each field its own variant, so that fields mixed up show.
	run := store.Run{
		ID:       "id\x00" + odd,
		Kind:     "kind\x00\xff",
		Idea:     "idea " + odd,
		Model:    "model\x00",
		Status:   store.Status("status\xff"),
		Error:    "error: " + odd,
		Parent:   "parent\x00\xc3",
		ForkedAt: 1,
		Spec:     json.RawMessage(`{"nul":"\u0000","lone":"\ud800"}` + "\x00\xff"),
		Created:  t0,
		Updated:  t0,
		Lease:    store.Lease{Owner: "owner\x00\xff", Expires: at(time.Minute)},
	}
	journal := []store.Entry{
		{Type: store.EntryMessage, Data: json.RawMessage(`{"text":"\u0000 nul, \\u0000 escaped"}`), Time: t0},
		{Type: store.EntryType("type\x00\xff"), Call: "call\x00" + odd, Data: json.RawMessage("\x00\xff\\x00 not JSON"), Time: t0},
		{Type: store.EntryStatus, Data: json.RawMessage(`{"status":"failed","error":"\u0000` + odd + `"}`), Time: t0},
	}
	create(t, s, run, journal...)
	more := store.Entry{Type: store.EntrySettled, Call: "\xff" + odd, Data: json.RawMessage("\\x\x00"), Time: t0}
	appendAs(t, s, run.ID, run.Lease.Owner, more)
	journal = append(journal, more)

	if diff := cmp.Diff(load(t, c, run.ID), utc(run), opts); diff != "" {
		t.Errorf("Load mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(entries(t, s, run.ID, 0), numbered(journal...), opts); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(collect(t, c.Runs(t.Context())), []store.Run{utc(run)}, opts); diff != "" {
		t.Errorf("Runs mismatch (-got +want):\n%s", diff)
	}

	// Owners differ after a NUL, and in bytes that are not UTF-8.
	for _, owner := range []string{"owner", "owner\x00", "owner\x00\xfe", "owner\x00\uFFFD"} {
		checkLeaseError(t, "Append as "+owner, s.Append(t.Context(), run.ID, store.Lease{Owner: owner}, more), run.ID, owner, run.Lease)
	}
	next := store.Lease{Owner: "next\x00" + odd, Expires: at(time.Hour)}
	acquire(t, s, run.ID, next, run.Lease.Expires)
	run.Error = "saved: " + odd
	run.Lease = next
	save(t, s, next.Owner, run)
	if diff := cmp.Diff(load(t, c, run.ID), utc(run), opts); diff != "" {
		t.Errorf("Load after Acquire and Save mismatch (-got +want):\n%s", diff)
	}

	// So do ids: each of these is a run of its own.
	ids := []string{"id", "id\x00", "id\x00a", "id\x00b", "id\xff", "id\xfe", "id\uFFFD", "id\\x00"}
	for _, id := range ids {
		create(t, s, store.Run{ID: id, Idea: id}, message(id, t0))
	}
	for _, id := range ids {
		if got := load(t, c, id); got.ID != id || got.Idea != id {
			t.Errorf("Load(%q) gave run %q with Idea %q", id, got.ID, got.Idea)
		}
		if diff := cmp.Diff(entries(t, s, id, 0), numbered(message(id, t0)), opts); diff != "" {
			t.Errorf("Entries(%q) mismatch (-got +want):\n%s", id, diff)
		}
	}
	if _, err := c.Load(t.Context(), "id\x00c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load of an id never created: error = %v, want ErrNotFound", err)
	}

	// A fork keeps the strings of its parent.
	fork, err := store.Fork(t.Context(), s, c, run.ID, 0, "fork\x00"+odd, t0)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if got := load(t, c, fork.ID); got.Parent != run.ID || got.Idea != run.Idea || got.Kind != run.Kind || got.Model != run.Model {
		t.Errorf("Load of the fork = %+v, want the parent's strings", got)
	}
}
