// Package stops holds what the adapters' errors for stopped solutions
// (see provider.SolutionError) share: an error names the lowest solution
// stopped, as Index, and the others, as Others.
package stops

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Solutions returns index followed by others, in a new slice: what
// Solutions of provider.SolutionError returns.
func Solutions(index int, others []int) []int {
	return append([]int{index}, others...)
}

// Others returns the indexes of stopped other than index, each once, in
// increasing order; nil when there are none.
func Others(index int, stopped []int) []int {
	var o []int
	for _, i := range stopped {
		if i != index && !slices.Contains(o, i) {
			o = append(o, i)
		}
	}
	slices.Sort(o)
	return o
}

// After returns err, which ended a stream after some of its solutions
// had been stopped (stop, a provider.SolutionError, or nil), as an error
// that wraps both: the caller finds the failure (provider.ErrTruncated,
// a *provider.Error) and the stopped solutions alike, which are no more
// a solution than on a stream that ended well. It returns err when stop
// is nil, and when err is the context's: the caller gave up on the
// answer.
func After(err, stop error) error {
	if stop == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w; before that, %w", err, stop)
}
