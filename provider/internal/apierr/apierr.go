// Package apierr completes the errors of the adapters with what only
// Generate knows of the request.
package apierr

import (
	"errors"

	"github.com/augceo/agent/provider"
)

// WithModel returns yield, with model set on the *provider.Error,
// *provider.TimeoutError and *provider.LimitError in each error's chain
// that name none: the model the request asked for, so that an error says
// which model failed as well as which provider. Each of those errors is
// made for one exchange, and reaches no one before it is yielded.
func WithModel(yield func(*provider.Chunk, error) bool, model string) func(*provider.Chunk, error) bool {
	return func(c *provider.Chunk, err error) bool {
		if err != nil {
			if pe, ok := errors.AsType[*provider.Error](err); ok && pe.Model == "" {
				pe.Model = model
			}
			if te, ok := errors.AsType[*provider.TimeoutError](err); ok && te.Model == "" {
				te.Model = model
			}
			if le, ok := errors.AsType[*provider.LimitError](err); ok && le.Model == "" {
				le.Model = model
			}
		}
		return yield(c, err)
	}
}
