package openai

import (
	"net/http"
	"testing"
	"time"
)

func TestRateLimitReset(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"tokens used up", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6m0s"},
			"X-Ratelimit-Remaining-Requests": {"499"}, "X-Ratelimit-Reset-Requests": {"120ms"}}, 6 * time.Minute},
		{"both used up: the longer", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"17ms"},
			"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1s"}}, time.Second},
		{"nothing used up", http.Header{"X-Ratelimit-Remaining-Tokens": {"12"}, "X-Ratelimit-Reset-Tokens": {"2s"}}, 0},
		{"Azure's reset in seconds", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6"}}, 6 * time.Second},
		{"a reset in fractional seconds", http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1.5"}}, 1500 * time.Millisecond},
		{"a reset that is no duration", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"soon"}}, 0},
		{"Retry-After first", http.Header{"Retry-After": {"2"}, "X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6s"}}, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.h); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
