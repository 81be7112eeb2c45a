package store

import "errors"

// Errors a Store, a Catalog or [Fork] returns that callers branch on. Test
// for them with [errors.Is]: implementations wrap them with the run's id.
var (
	// ErrNotFound reports a run the store does not hold.
	ErrNotFound = errors.New("store: run not found")
	// ErrExists reports a fork whose new run id is taken.
	ErrExists = errors.New("store: run already exists")
	// ErrRange reports a fork point past the end of the parent's log.
	ErrRange = errors.New("store: fork point out of range")
)
