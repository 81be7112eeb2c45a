package store

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/augceo/agent/provider"
)

// Status is where a run stands.
type Status string

// The statuses of a run.
const (
	Running     Status = "running"     // started and not finished; after a crash it stays so until resumed
	Done        Status = "done"        // ended with an output, or a plan ran to its end
	Failed      Status = "failed"      // ended with an error (a limit, a bad plan, a provider error)
	Interrupted Status = "interrupted" // stopped by cancellation (Ctrl-C); resumable
)

// Run is the metadata of one run.
type Run struct {
	ID     string
	Kind   string // "plan" (ExecutePlan, no model) or "loop" (the agent loop)
	Idea   string // where the run came from: an Idea file's path, or a name
	Model  string // provider:model, empty for plans
	Status Status
	Error  string // why it failed or was interrupted
	Usage  provider.Usage
	// Parent and ForkedAt name the run this one was forked from and the
	// Seq, in the parent's journal, of the message it was forked at (016
	// branches; see [Fork]).
	Parent   string
	ForkedAt int64
	// Spec holds what resuming needs beyond the journal: the schema of a
	// loop run, settings. Opaque to the store.
	Spec    json.RawMessage
	Created time.Time
	Updated time.Time
	// Lease is who advances the run now, and until when; zero when no one
	// does. See [Store.Acquire].
	Lease Lease
}

// Lease holds a run for one owner, a process advancing it (a run, a
// resume), until Expires unless the owner renews it. Only the holder
// writes the run, so two processes never advance it at once; after a
// crash the lease expires and another process may take the run over.
type Lease struct {
	Owner   string
	Expires time.Time
}

// Fence is the rule of Save and Append, for backends: it returns a
// *LeaseError unless owner holds run, whose lease is l (an owner of ""
// writes a run no one holds).
func (l Lease) Fence(run, owner string) error {
	if l.Owner != owner {
		return &LeaseError{Run: run, Owner: owner, Held: l}
	}
	return nil
}

// Extend is the lease a write of its holder leaves, for backends: l, the
// lease held, as next would have it (next.Owner takes it), but expiring
// no sooner than l when l's owner keeps it. A write sent before another
// but landing after it so cannot shorten the lease the other renewed.
func (l Lease) Extend(next Lease) Lease {
	if next.Owner != "" && next.Owner == l.Owner && l.Expires.After(next.Expires) {
		next.Expires = l.Expires
	}
	return next
}

// Yield is the rule of Acquire, for backends: it returns a *LeaseError
// when l, run's lease, keeps owner from taking it at now: another owner
// holds it, and its lease has not expired.
func (l Lease) Yield(run, owner string, now time.Time) error {
	if l.Owner != "" && l.Owner != owner && l.Expires.After(now) {
		return &LeaseError{Run: run, Owner: owner, Held: l}
	}
	return nil
}

// EntryType names what a journal entry records.
type EntryType string

// The types of journal entries.
const (
	// EntryMessage is a message appended to the run's log; Data holds it
	// in canonical JSON. The messages of a journal, in order, are the log.
	EntryMessage EntryType = "message"
	// EntryQueued is a call the model wrote in a step of a loop run,
	// recorded as it arrived, before it starts or while it waits for the
	// data it reads: Call names it and Data holds its JSON. A resume runs
	// a queued call that never started.
	EntryQueued EntryType = "queued"
	// EntryAdvice holds the advisors' opinions of a step's solution in a
	// loop run, recorded as they arrived, before the step's calls start:
	// Call holds the step and Data the opinions, a JSON array. A resume
	// weighs the step's queued calls by them.
	EntryAdvice EntryType = "advice"
	// EntryStarted is a call about to run; Call names it and Data holds
	// its JSON. It is durable before the call's activity starts.
	EntryStarted EntryType = "started"
	// EntrySettled is a call that finished, with or without an error. It
	// is appended together with the call's messages, atomically.
	EntrySettled EntryType = "settled"
	// EntrySolution is a solution received from the model in a step of
	// a loop run; Call holds the step number and Data the solution.
	EntrySolution EntryType = "solution"
	// EntryEnd closes a journal whose run reached its end; it is appended
	// together with the run's last messages, so a resume finds either all
	// of them or none. Data holds the run's result: its last solution,
	// usage and advice.
	EntryEnd EntryType = "end"
	// EntryUsage is the usage of one request to the model, appended when
	// its answer arrived, valid or not; Call holds the step (or the call
	// that made the request) and Data the provider.Usage, with
	// "lost":true when the request's stream broke before the provider said
	// it (agent.RunEvent.UsageLost). A run's usage is the sum of its
	// journal's usage entries.
	EntryUsage EntryType = "usage"
	// EntryStatus records that the run stopped without reaching its end:
	// Data holds {"status":"failed"|"interrupted","error":"..."}.
	EntryStatus EntryType = "status"
)

// Entry is one record of a run's journal.
type Entry struct {
	// Seq is the entry's position in its run's journal, from 1. Append
	// assigns it; values given to Append are ignored.
	Seq  int64
	Type EntryType
	// Call identifies a call within the run (started, settled), or a step
	// (solution, usage). A message names the call it is the error message
	// of, if it is one; other messages leave it empty.
	Call string
	Data json.RawMessage
	Time time.Time
}

// Store is where a run's metadata and journal go while it runs.
//
// Implementations are safe for concurrent use, also by several processes
// sharing one database: each method is atomic. The agent appends to one
// run from one goroutine at a time; different runs may be written
// concurrently. The store owns nothing it is given: it copies what it
// keeps. A cancelled ctx may abort a call; a write either keeps all it
// was given or nothing. Any string and any bytes can be saved, NUL and
// invalid UTF-8 included, and come back as they were.
//
// Writes are fenced by the run's lease: Save and Append name the owner
// they write for, and fail with a [*LeaseError] when the run is held by
// another (or by no one, for an owner that lost or released it).
type Store interface {
	// Create saves a new run and the first entries of its journal,
	// together. It returns an error wrapping ErrExists if the id is taken.
	// When run.Lease names an owner, the run is held by it from the start.
	Create(ctx context.Context, run Run, entries ...Entry) error
	// Save replaces the metadata of a run, its Lease included (a zero
	// Lease releases it), for owner: the holder of its lease, or "" for
	// a run no one holds; and appends entries to its journal, as Append
	// does, together: it writes all of it or nothing. A holder that keeps
	// its lease never shortens it: the lease expires at the later of
	// run.Lease.Expires and its expiry before. It returns ErrNotFound for
	// a run never created.
	Save(ctx context.Context, owner string, run Run, entries ...Entry) error
	// Acquire leases run id to lease.Owner until lease.Expires when no
	// one holds it, when its holder's lease expired at or before now, or
	// when lease.Owner holds it already (a renewal, which never shortens
	// the lease). Otherwise it returns a *LeaseError naming the holder
	// and when its lease expires.
	Acquire(ctx context.Context, id string, lease Lease, now time.Time) error
	// Append adds entries to the end of a run's journal for lease.Owner
	// (as for Save) and returns once they are durable: a process killed
	// after Append returned keeps them. The write renews the lease: when
	// lease.Expires is later than the lease's expiry, the lease expires
	// then (a zero Expires leaves it). It returns ErrNotFound for a run
	// never created.
	Append(ctx context.Context, id string, lease Lease, entries ...Entry) error
	// Entries walks a run's journal in order, from the first entry whose
	// Seq is greater than after. It yields ErrNotFound for an unknown run.
	Entries(ctx context.Context, id string, after int64) iter.Seq2[Entry, error]
}

// Catalog is the read side of a store: the runs it holds.
type Catalog interface {
	// Load returns a run's metadata, or ErrNotFound.
	Load(ctx context.Context, id string) (Run, error)
	// Runs walks every run, most recently created first. A run it cannot
	// read is an error, and the walk goes on while the caller asks.
	Runs(ctx context.Context) iter.Seq2[Run, error]
}
