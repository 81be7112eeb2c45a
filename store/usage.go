package store

import (
	"encoding/json"
	"fmt"

	"github.com/augceo/agent/provider"
)

// UsageTotal adds up the usage entries of a run's journal: one per
// request to the model, so the sum is exact across failures, crashes and
// resumes. A journal written before usage entries existed has none; its
// run's usage is the one saved with it.
type UsageTotal struct {
	sum  provider.Usage
	seen bool
	lost int
}

// Add counts e if it is a usage entry, and fails if its data is not one.
func (t *UsageTotal) Add(e Entry) error {
	if e.Type != EntryUsage {
		return nil
	}
	var u struct {
		provider.Usage
		Lost bool `json:"lost"`
	}
	if err := json.Unmarshal(e.Data, &u); err != nil {
		return fmt.Errorf("store: usage entry %d: %w", e.Seq, err)
	}
	t.sum.Add(u.Usage)
	t.seen = true
	if u.Lost {
		t.lost++
	}
	return nil
}

// Lost returns how many of the usage entries added are marked lost: the
// request's stream broke after its answer, before the provider said its
// usage, so the sum lacks what it was billed.
func (t *UsageTotal) Lost() int { return t.lost }

// Of returns run's usage: the sum of the entries added, or, when none
// was a usage entry, run.Usage.
func (t *UsageTotal) Of(run Run) provider.Usage {
	if !t.seen {
		return run.Usage
	}
	return t.sum
}
