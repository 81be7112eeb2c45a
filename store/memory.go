package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"
)

// Memory is a [Store] and [Catalog] that keeps everything in memory, for
// tests and for runs that need not outlive the process. Its zero value is
// not usable; call [NewMemory].
//
// Memory is safe for concurrent use. It copies what it is given (Data,
// Spec) and what it returns, so neither side can change the other's bytes.
// Times come back in UTC without a monotonic clock reading, as from the
// other implementations.
type Memory struct {
	mu   sync.RWMutex
	runs map[string]*memoryRun
}

type memoryRun struct {
	run Run
	// entries only grows, and an element once appended never changes, so
	// a reader may keep a slice of it after releasing the lock.
	entries []Entry
}

var (
	_ Store   = (*Memory)(nil)
	_ Catalog = (*Memory)(nil)
)

// NewMemory returns an empty Memory.
func NewMemory() *Memory {
	return &Memory{runs: make(map[string]*memoryRun)}
}

// Create saves a new run and its first entries, or returns ErrExists.
func (m *Memory) Create(ctx context.Context, run Run, entries ...Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	run = cloneRun(run)
	copied := copyEntries(entries, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[run.ID]; ok {
		return fmt.Errorf("create run %s: %w", run.ID, ErrExists)
	}
	m.runs[run.ID] = &memoryRun{run: run, entries: copied}
	return nil
}

// Save replaces the metadata of a run for owner and appends entries to
// its journal.
func (m *Memory) Save(ctx context.Context, owner string, run Run, entries ...Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	run = cloneRun(run)
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.held(run.ID, owner, "save")
	if err != nil {
		return err
	}
	run.Lease = r.run.Lease.Extend(run.Lease)
	r.run = run
	r.entries = append(r.entries, copyEntries(entries, len(r.entries))...)
	return nil
}

// Acquire leases a run to lease.Owner; see [Store.Acquire].
func (m *Memory) Acquire(ctx context.Context, id string, lease Lease, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return fmt.Errorf("acquire run %s: %w", id, ErrNotFound)
	}
	if err := r.run.Lease.Yield(id, lease.Owner, now); err != nil {
		return err
	}
	r.run.Lease = r.run.Lease.Extend(Lease{Owner: lease.Owner, Expires: lease.Expires.UTC()})
	return nil
}

// Append adds entries to the end of a run's journal for lease.Owner,
// numbering them from the journal's last Seq plus one, and renews the
// lease to lease.Expires. It returns ErrNotFound for a run never
// created, and appends nothing if ctx is already done.
func (m *Memory) Append(ctx context.Context, id string, lease Lease, entries ...Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.held(id, lease.Owner, "append to")
	if err != nil {
		return err
	}
	if lease.Owner != "" {
		r.run.Lease = r.run.Lease.Extend(Lease{Owner: lease.Owner, Expires: lease.Expires.UTC()})
	}
	r.entries = append(r.entries, copyEntries(entries, len(r.entries))...)
	return nil
}

// held returns run id when owner holds it (or no one does and owner is
// ""). The caller holds m.mu.
func (m *Memory) held(id, owner, what string) (*memoryRun, error) {
	r, ok := m.runs[id]
	if !ok {
		return nil, fmt.Errorf("%s run %s: %w", what, id, ErrNotFound)
	}
	return r, r.run.Lease.Fence(id, owner)
}

// copyEntries copies entries, numbered after the journal's first n.
func copyEntries(entries []Entry, n int) []Entry {
	copied := make([]Entry, len(entries))
	for i, e := range entries {
		copied[i] = Entry{Seq: int64(n + i + 1), Type: e.Type, Call: e.Call, Data: bytes.Clone(e.Data), Time: e.Time.UTC()}
	}
	return copied
}

// Entries walks a run's journal from the first entry whose Seq is greater
// than after. It sees the entries appended before it started and yields
// ErrNotFound for an unknown run.
func (m *Memory) Entries(ctx context.Context, id string, after int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		m.mu.RLock()
		r, ok := m.runs[id]
		var entries []Entry
		if ok {
			entries = r.entries
		}
		m.mu.RUnlock()
		if !ok {
			yield(Entry{}, fmt.Errorf("entries of run %s: %w", id, ErrNotFound))
			return
		}
		// Seq n is at index n-1.
		for _, e := range entries[min(max(after, 0), int64(len(entries))):] {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
			e.Data = bytes.Clone(e.Data)
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Load returns a run's metadata, or ErrNotFound.
func (m *Memory) Load(ctx context.Context, id string) (Run, error) {
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	m.mu.RLock()
	r, ok := m.runs[id]
	var run Run
	if ok {
		run = r.run
	}
	m.mu.RUnlock()
	if !ok {
		return Run{}, fmt.Errorf("load run %s: %w", id, ErrNotFound)
	}
	return cloneRun(run), nil
}

// Runs walks every run, most recently created first, then by id. It walks
// the runs saved before it started.
func (m *Memory) Runs(ctx context.Context) iter.Seq2[Run, error] {
	return func(yield func(Run, error) bool) {
		m.mu.RLock()
		runs := make([]Run, 0, len(m.runs))
		for _, r := range m.runs {
			runs = append(runs, r.run)
		}
		m.mu.RUnlock()
		slices.SortFunc(runs, func(a, b Run) int {
			if c := b.Created.Compare(a.Created); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		for _, run := range runs {
			if err := ctx.Err(); err != nil {
				yield(Run{}, err)
				return
			}
			if !yield(cloneRun(run), nil) {
				return
			}
		}
	}
}

// cloneRun returns run with its own Spec and its times in UTC.
func cloneRun(run Run) Run {
	run.Spec = bytes.Clone(run.Spec)
	run.Created = run.Created.UTC()
	run.Updated = run.Updated.UTC()
	run.Lease.Expires = run.Lease.Expires.UTC()
	return run
}
