package store

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Store, a Catalog or [Fork] returns that callers branch on. Test
// for them with [errors.Is]: implementations wrap them with the run's id.
var (
	// ErrNotFound reports a run the store does not hold.
	ErrNotFound = errors.New("store: run not found")
	// ErrExists reports a fork whose new run id is taken.
	ErrExists = errors.New("store: run already exists")
	// ErrRange reports a fork point past the end of the parent's log.
	ErrRange = errors.New("store: fork point out of range")
	// ErrLeased reports a run held by another owner; the error is a
	// [*LeaseError] that names it.
	ErrLeased = errors.New("store: run is held by another owner")
)

// LeaseError reports a write or an Acquire refused because the run is
// held by another owner than the one named, or by no one (a former
// owner whose lease was released or taken over).
type LeaseError struct {
	Run   string
	Owner string // who asked
	Held  Lease  // the run's lease: zero when no one holds it
}

func (e *LeaseError) Error() string {
	if e.Held.Owner == "" {
		return fmt.Sprintf("store: run %s is held by no one, not by %q: its lease was released", e.Run, e.Owner)
	}
	return fmt.Sprintf("store: run %s is held by %s until %s", e.Run, e.Held.Owner, e.Held.Expires.UTC().Format(time.RFC3339))
}

// Unwrap returns ErrLeased.
func (e *LeaseError) Unwrap() error { return ErrLeased }
