package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limit"
)

// statusOf gives the HTTP status that goes with each documented error type,
// for an error event inside a stream, whose response status was 200.
var statusOf = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// convertErr turns an error of the SDK into the error Generate yields:
// ctx.Err() when ctx has ended, a *provider.Error for an error response,
// and the error itself, wrapped, otherwise.
func convertErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if own := limit.Own(err); own != nil {
		return own
	}
	if ae, ok := errors.AsType[*sdk.Error](err); ok {
		return apiError(ae)
	}
	return fmt.Errorf("anthropic: %w", err)
}

// convertStreamErr is convertErr for an error that ended a stream after it
// started: one that is not the API's is a cut stream.
func convertStreamErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if own := limit.Own(err); own != nil {
		return own
	}
	if ae, ok := errors.AsType[*sdk.Error](err); ok {
		return apiError(ae)
	}
	return fmt.Errorf("anthropic: %w: %w", provider.ErrTruncated, err)
}

// apiError converts an error response, or an error event of a stream, whose
// body is {"type":"error","error":{"type":…,"message":…}}.
func apiError(ae *sdk.Error) *provider.Error {
	raw := ae.RawJSON()
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(raw), &body) // a body that is not JSON is the message
	pe := &provider.Error{Provider: "anthropic", Status: ae.StatusCode, Code: body.Error.Type}
	if pe.Status < 300 {
		pe.Status = statusOf[pe.Code]
		if pe.Status == 0 {
			pe.Status = http.StatusInternalServerError
		}
	}
	msg := body.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(raw)
	}
	if msg == "" {
		msg = http.StatusText(pe.Status)
	}
	pe.Err = errors.New(msg)
	if ae.Response != nil {
		pe.RetryAfter = retryAfter(ae.Response.Header)
	}
	return pe
}

func retryAfter(h http.Header) time.Duration { return provider.RetryAfter(h) }
