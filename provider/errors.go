package provider

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors.
var (
	// ErrTruncated reports a stream that ended before the answer did, or
	// the body of a whole answer cut after its first byte.
	ErrTruncated = errors.New("provider: stream ended early")
	// ErrNoKey reports a missing API key.
	ErrNoKey = errors.New("provider: no API key")
	// ErrTimeout is wrapped by every [TimeoutError].
	ErrTimeout = errors.New("provider: timeout")
	// ErrTooLarge is wrapped by every [LimitError].
	ErrTooLarge = errors.New("provider: answer too large")
	// ErrNoAnswer marks a network error that came before any byte of the
	// answer: a connection refused or reset, or closed before the
	// headers or the first byte of the body. Nothing of the answer was
	// received, so [Retry] retries it. The adapters attach it to the
	// transport's error (fmt.Errorf("%w: %w", ErrNoAnswer, err)); another
	// Provider can do the same to opt in.
	ErrNoAnswer = errors.New("provider: no answer")
)

// Phase names the part of an HTTP exchange a [TimeoutError] bounded.
type Phase string

// The phases of an exchange with a provider's API, in order.
const (
	// PhaseConnect is dialing and the TLS handshake.
	PhaseConnect Phase = "connect"
	// PhaseFirstByte runs from the connection to the first byte of the
	// response body, so it covers the headers, and the whole answer of a
	// request that does not stream.
	PhaseFirstByte Phase = "first byte"
	// PhaseIdle is the server's silence once the first byte of the body
	// arrived: how long one read of the body waits. The time the
	// consumer takes between two reads does not count.
	PhaseIdle Phase = "idle"
)

// TimeoutError reports that a provider's API did not answer in time: no
// connection, no first byte, or a stream that went quiet. It wraps
// [ErrTimeout]. Only PhaseConnect and PhaseFirstByte are retried by
// [Retry], since nothing of the answer arrived before them.
type TimeoutError struct {
	Provider string        // "openai", "anthropic", "gemini", ...
	Model    string        // the model the request asked for, when the adapter says
	Phase    Phase         // which wait ran out
	After    time.Duration // the timeout that fired
}

// Error returns, for example, "openai gpt-5: no first byte within 1m0s"
// or "anthropic claude-sonnet-4-6: stream idle for 30s".
func (e *TimeoutError) Error() string {
	who := named(e.Provider, e.Model)
	switch e.Phase {
	case PhaseConnect:
		return fmt.Sprintf("%s: no connection within %v", who, e.After)
	case PhaseFirstByte:
		return fmt.Sprintf("%s: no first byte within %v", who, e.After)
	case PhaseIdle:
		return fmt.Sprintf("%s: stream idle for %v", who, e.After)
	}
	return fmt.Sprintf("%s: %s timeout after %v", who, e.Phase, e.After)
}

// Unwrap returns [ErrTimeout].
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Timeout reports true, as a net.Error does for a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// LimitError reports an answer larger than the adapter's cap: the text
// and thinking of a stream, or the body of a response that does not
// stream. The stream ends with it; it wraps [ErrTooLarge].
type LimitError struct {
	Provider string
	Model    string // the model the request asked for, when the adapter says
	Limit    int64  // the cap, in bytes
}

// Error returns, for example, "openai gpt-5: answer exceeds the cap of
// 8388608 bytes".
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: answer exceeds the cap of %d bytes", named(e.Provider, e.Model), e.Limit)
}

// named is the provider followed by the model, when known, as errors
// begin: "openai gpt-5".
func named(provider, model string) string {
	if model == "" {
		return provider
	}
	return provider + " " + model
}

// Unwrap returns [ErrTooLarge].
func (e *LimitError) Unwrap() error { return ErrTooLarge }

// SolutionError is an error that concerns some solutions of an answer
// only: the provider stopped them before their end (a refusal, a content
// filter), while every other solution ended as usual. An adapter yields it
// as the last item of its stream, after the chunks of every solution, so
// that the text that arrived is not lost. Solutions returns the indexes of
// the stopped solutions, in increasing order, at least one; their text is
// cut or empty, and is no answer.
//
// A Request for several solutions leaves the stopped ones out and asks
// again for them; it fails with the error only when no solution is left.
// The adapters' errors implement it: *openai.RefusalError and
// *openai.FilterError, *anthropic.StopError and *gemini.FinishError.
type SolutionError interface {
	error
	Solutions() []int
}

// Error is an error response from a provider's API.
type Error struct {
	Provider   string        // "openai", "anthropic", "gemini", ...
	Model      string        // the model the request asked for, when the adapter says
	Status     int           // HTTP status, or the one an error event inside a stream stands for; 0 if none
	Code       string        // the provider's error type or code, if any
	RetryAfter time.Duration // from the Retry-After header (or the body), 0 if absent
	Err        error         // the provider's message, as an error
}

// Error returns, for example, "anthropic claude-sonnet-4-6: 529
// Overloaded (overloaded_error): Overloaded".
func (e *Error) Error() string {
	s := named(e.Provider, e.Model)
	if e.Status != 0 {
		s += fmt.Sprintf(": %d", e.Status)
		if text := statusText(e.Status); text != "" {
			s += " " + text
		}
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// statusText is http.StatusText, which has none for Anthropic's 529.
func statusText(status int) string {
	if status == 529 {
		return "Overloaded"
	}
	return http.StatusText(status)
}

// CodeInvalidSchema is the [Error.Code] of a server error that the
// schema of the request caused (Ollama's 500 "invalid JSON schema in
// format"): sent again, it fails again.
const CodeInvalidSchema = "invalid_json_schema"

// Temporary reports whether retrying may succeed: rate limits, overload
// and server errors, but not a quota used up (OpenAI's 429
// insufficient_quota), which stays so until someone pays, nor a schema
// the server cannot use ([CodeInvalidSchema]).
func (e *Error) Temporary() bool {
	switch {
	case e.Code == "insufficient_quota", e.Code == CodeInvalidSchema:
		return false
	case e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout,
		e.Status == 529, // Anthropic: overloaded
		e.Status >= 500:
		return true
	}
	return false
}

// ParseRetryAfter reads a Retry-After header value: seconds or an HTTP date
// relative to now.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var secs float64
	if _, err := fmt.Sscanf(v, "%g", &secs); err == nil && secs >= 0 {
		return duration(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// duration returns n units, or the longest Duration when that is
// longer: a wait too long to hold is still one too long to wait for,
// where a conversion past the range would give a negative one.
func duration(n float64, unit time.Duration) time.Duration {
	if d := n * float64(unit); d < math.MaxInt64 {
		return time.Duration(d)
	}
	return math.MaxInt64
}

// RetryAfter reads how long a response asks to wait: the retry-after-ms
// header (OpenAI), else Retry-After in seconds, else Retry-After as an HTTP
// date taken relative to the response's Date header, so that no local clock
// is read. It is 0 when absent or unreadable.
func RetryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return duration(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return ParseRetryAfter(v, time.Time{})
	}
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return 0
	}
	return ParseRetryAfter(v, date)
}
