// Package columns holds what the SQL stores write the same way: times as
// text, a run's usage as JSON, and the errors that name a run. Both
// stores keep these columns so, and a run read back from either is the
// run that was saved.
package columns

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/augceo/agent/store"
)

// timeLayout is RFC 3339 in UTC with all nine fractional digits, so that
// the text has a fixed width and sorts as the times do.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// MaxTime is the latest time FormatTime writes: a time after it sorts
// after every time stored.
const MaxTime = "9999-12-31T23:59:59.999999999Z"

// FormatTime writes t as the stores keep times.
func FormatTime(t time.Time) (string, error) {
	t = t.UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return "", fmt.Errorf("time %v is outside years 0 to 9999", t)
	}
	return t.Format(timeLayout), nil
}

// ParseTime reads a time FormatTime wrote.
func ParseTime(s string) (time.Time, error) { return time.Parse(timeLayout, s) }

// Run is a run's columns that are written as text: its times and its
// usage.
type Run struct {
	Created, Updated, Expires string
	Usage                     string
}

// Texts returns the text columns of run.
func Texts(run store.Run) (Run, error) {
	var c Run
	var err error
	if c.Created, err = FormatTime(run.Created); err != nil {
		return Run{}, fmt.Errorf("created: %w", err)
	}
	if c.Updated, err = FormatTime(run.Updated); err != nil {
		return Run{}, fmt.Errorf("updated: %w", err)
	}
	if c.Expires, err = FormatTime(run.Lease.Expires); err != nil {
		return Run{}, fmt.Errorf("lease expiry: %w", err)
	}
	usage, err := json.Marshal(run.Usage)
	if err != nil {
		return Run{}, err
	}
	c.Usage = string(usage)
	return c, nil
}

// Read sets run's usage, times and lease from their columns, as Texts
// wrote them; run.ID is set, for the errors.
func Read(run *store.Run, c Run, owner string) error {
	if err := json.Unmarshal([]byte(c.Usage), &run.Usage); err != nil {
		return fmt.Errorf("run %s: usage: %w", run.ID, err)
	}
	var err error
	if run.Created, err = ParseTime(c.Created); err != nil {
		return fmt.Errorf("run %s: created: %w", run.ID, err)
	}
	if run.Updated, err = ParseTime(c.Updated); err != nil {
		return fmt.Errorf("run %s: updated: %w", run.ID, err)
	}
	if run.Lease, err = Lease(owner, c.Expires); err != nil {
		return fmt.Errorf("run %s: %w", run.ID, err)
	}
	return nil
}

// Lease returns the lease of a run's lease_owner and lease_expires.
func Lease(owner, expires string) (store.Lease, error) {
	t, err := ParseTime(expires)
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease expiry: %w", err)
	}
	return store.Lease{Owner: owner, Expires: t}, nil
}

// Wrap returns err with what the call did to run id, except a nil err
// and a *store.LeaseError, which names the run already.
func Wrap(err error, what, id string) error {
	if _, ok := errors.AsType[*store.LeaseError](err); err == nil || ok {
		return err
	}
	return fmt.Errorf("%s run %s: %w", what, id, err)
}
