package anthropic

import (
	"cmp"
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
	"github.com/augceo/agent/provider/internal/stops"
)

// Stop reasons after which an answer is neither whole nor cut at the
// token limit; see [StopError].
const (
	// StopRefusal is the stop_reason of an answer that a safety
	// classifier stopped: the model declined to go on.
	StopRefusal = "refusal"
	// StopContextWindow is the stop_reason of an answer that filled the
	// model's context window: the prompt and the answer together reached
	// it, whatever max_tokens allowed.
	StopContextWindow = "model_context_window_exceeded"
)

// StopError reports an answer that the API stopped before its end, for a
// reason that asking again does not cure: stop_reason "refusal" (a safety
// classifier stopped it; the same conversation is refused again until the
// turn that caused it is changed) or "model_context_window_exceeded" (the
// prompt filled the model's context window; a repair, which adds the cut
// answer to the conversation, has even less room). Its text is cut, or
// empty. Generate yields it after the chunks of every solution, the Done
// chunk of this one included, whose FinishReason is the stop_reason, so
// the text that arrived is not lost; when several solutions stopped so,
// it names the lowest index, and Others the rest.
type StopError struct {
	Index  int    // the solution
	Reason string // stop_reason as sent: [StopRefusal] or [StopContextWindow]
	// Category and Explanation are a refusal's stop_details: the policy
	// category ("cyber", "bio", ...) and the API's explanation; empty when
	// the API sent none.
	Category    string
	Explanation string
	// Others are the other solutions the API stopped so, in increasing
	// order; none when Index alone was. Their reasons may differ.
	Others []int
}

var _ provider.SolutionError = (*StopError)(nil)

// Solutions returns Index and Others: every solution the API stopped (see
// [provider.SolutionError]).
func (e *StopError) Solutions() []int { return stops.Solutions(e.Index, e.Others) }

// Error returns, for example, "anthropic: solution 0 stopped (refusal:
// cyber): This request was declined because it could enable cyber harm."
// or "anthropic: solution 0 stopped (model_context_window_exceeded): the
// conversation filled the model's context window".
func (e *StopError) Error() string {
	why := e.Reason
	if e.Category != "" {
		why += ": " + e.Category
	}
	s := fmt.Sprintf("anthropic: solution %d stopped (%s)", e.Index, why)
	switch {
	case e.Explanation != "":
		s += ": " + e.Explanation
	case e.Reason == StopContextWindow:
		s += ": the conversation filled the model's context window"
	}
	return s
}

// stopped returns the error for solution i that ended for reason with
// the stop_details given, nil when reason is an end or a token limit.
func stopped(i int, reason, category, explanation string) *StopError {
	if reason != StopRefusal && reason != StopContextWindow {
		return nil
	}
	return &StopError{Index: i, Reason: reason, Category: category, Explanation: explanation}
}

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

// proxyMessage returns the message of an error body in a proxy's form,
// {"error":"text"} or {"message":…}, "" for another.
func proxyMessage(raw string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil {
		return ""
	}
	var text string
	if json.Unmarshal(v.Error, &text) == nil && text != "" {
		return text
	}
	return v.Message
}

// apiError converts an error response, or an error event of a stream, whose
// body is {"type":"error","error":{"type":…,"message":…}}. A proxy's
// {"error":"text"} or {"message":…} says its message too.
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
	msg := cmp.Or(body.Error.Message, proxyMessage(raw), strings.TrimSpace(raw))
	if msg == "" {
		msg = http.StatusText(pe.Status)
	}
	pe.Err = errors.New(msg)
	if ae.Response != nil {
		pe.RetryAfter = retryAfter(ae.Response.Header)
		if pe.RetryAfter == 0 && pe.Status == http.StatusTooManyRequests {
			pe.RetryAfter = rateLimitReset(ae.Response.Header)
		}
	}
	return pe
}

func retryAfter(h http.Header) time.Duration { return provider.RetryAfter(h) }

// rateLimits are the limits the API reports in anthropic-ratelimit-*
// headers.
var rateLimits = []string{"requests", "tokens", "input-tokens", "output-tokens"}

// rateLimitReset reads, for a 429 without Retry-After, when the limits
// used up reset: the latest anthropic-ratelimit-*-reset (an RFC 3339
// time) of those whose remaining is 0, taken relative to the response's
// Date header, so that no local clock is read. It is 0 when none says.
func rateLimitReset(h http.Header) time.Duration {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return 0
	}
	var wait time.Duration
	for _, limit := range rateLimits {
		if strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+limit+"-Remaining")) != "0" {
			continue
		}
		reset, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("Anthropic-Ratelimit-"+limit+"-Reset")))
		if err == nil && reset.Sub(date) > wait {
			wait = reset.Sub(date)
		}
	}
	return wait
}
