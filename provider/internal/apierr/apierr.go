// Package apierr completes the provider.Errors of the adapters with what
// only Generate knows of the request.
package apierr

import (
	"errors"

	"github.com/augceo/agent/provider"
)

// WithModel returns yield, with model set on the *provider.Error in each
// error's chain that names none: the model the request asked for, so
// that an error says which model failed as well as which provider.
func WithModel(yield func(*provider.Chunk, error) bool, model string) func(*provider.Chunk, error) bool {
	return func(c *provider.Chunk, err error) bool {
		if pe, ok := errors.AsType[*provider.Error](err); ok && pe.Model == "" {
			pe.Model = model
		}
		return yield(c, err)
	}
}
