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
}

// Add counts e if it is a usage entry, and fails if its data is not one.
func (t *UsageTotal) Add(e Entry) error {
	if e.Type != EntryUsage {
		return nil
	}
	var u provider.Usage
	if err := json.Unmarshal(e.Data, &u); err != nil {
		return fmt.Errorf("store: usage entry %d: %w", e.Seq, err)
	}
	t.sum.Add(u)
	t.seen = true
	return nil
}

// Of returns run's usage: the sum of the entries added, or, when none
// was a usage entry, run.Usage.
func (t *UsageTotal) Of(run Run) provider.Usage {
	if !t.seen {
		return run.Usage
	}
	return t.sum
}
