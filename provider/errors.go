package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors.
var (
	// ErrTruncated reports a stream that ended before the answer did.
	ErrTruncated = errors.New("provider: stream ended early")
	// ErrNoKey reports a missing API key.
	ErrNoKey = errors.New("provider: no API key")
)

// Error is an error response from a provider's API.
type Error struct {
	Provider   string        // "openai", "anthropic", "gemini", ...
	Status     int           // HTTP status, 0 if none was received
	Code       string        // the provider's error type or code, if any
	RetryAfter time.Duration // from the Retry-After header (or the body), 0 if absent
	Err        error         // the provider's message, as an error
}

func (e *Error) Error() string {
	s := e.Provider
	if e.Status != 0 {
		s += fmt.Sprintf(": %d %s", e.Status, http.StatusText(e.Status))
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

// Temporary reports whether retrying may succeed: rate limits, overload
// and server errors.
func (e *Error) Temporary() bool {
	switch {
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
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// RetryAfter reads how long a response asks to wait: the retry-after-ms
// header (OpenAI), else Retry-After in seconds, else Retry-After as an HTTP
// date taken relative to the response's Date header, so that no local clock
// is read. It is 0 when absent or unreadable.
func RetryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
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
