package cli

import "errors"

// ErrUnknownProvider is what an [Env.Providers] function returns, wrapped,
// for a provider name it does not know. Main reports it as a usage error
// (exit status 2).
var ErrUnknownProvider = errors.New("unknown provider")

// errUsage marks errors that exit with status 2.
var errUsage = errors.New("usage")

// exitError carries an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
