package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/augceo/agent/provider"
)

func TestRetryAfter(t *testing.T) {
	const (
		tokens = "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 27000, Requested 8000."
		hint   = tokens + " Please try again in 1.574s. Visit https://platform.openai.com/account/rate-limits to learn more."
	)
	// left is what a 429 for a request bigger than what is left carries:
	// no limit at 0.
	left := http.Header{"X-Ratelimit-Remaining-Tokens": {"3000"}, "X-Ratelimit-Reset-Tokens": {"54s"},
		"X-Ratelimit-Remaining-Requests": {"499"}, "X-Ratelimit-Reset-Requests": {"120ms"}}
	for _, tt := range []struct {
		name   string
		h      http.Header
		status int
		kind   string
		msg    string
		want   time.Duration
	}{
		{"none", http.Header{}, 429, "", "", 0},
		{"tokens used up", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6m0s"},
			"X-Ratelimit-Remaining-Requests": {"499"}, "X-Ratelimit-Reset-Requests": {"120ms"}}, 429, "tokens", tokens, 6 * time.Minute},
		{"both used up: the longer", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"17ms"},
			"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1s"}}, 429, "", "", time.Second},
		{"Azure's reset in seconds", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6"}}, 429, "", "", 6 * time.Second},
		{"a reset in fractional seconds", http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1.5"}}, 429, "requests", "", 1500 * time.Millisecond},
		{"a reset that is no duration", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"soon"}}, 429, "", "", 0},
		{"Retry-After first", http.Header{"Retry-After": {"2"}, "X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6s"}}, 429, "tokens", hint, 2 * time.Second},
		{"the message's wait before the reset of a limit used up", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6s"}}, 429, "tokens", hint, 1574 * time.Millisecond},
		{"bigger than what is left: the message's wait", left, 429, "tokens", hint, 1574 * time.Millisecond},
		{"bigger than what is left, no wait in the message: the tokens reset", left, 429, "tokens", tokens, 54 * time.Second},
		{"bigger than what is left, no type: the tokens reset", left, 429, "", "Too Many Requests", 54 * time.Second},
		{"requests limited over a shorter span: the requests reset", left, 429, "requests", "Rate limit reached on requests per min (RPM)", 120 * time.Millisecond},
		{"Groq's daily wait", http.Header{}, 429, "tokens", "Rate limit reached for model `m` on tokens per day (TPD): Limit 100000, Used 99151, Requested 1026. Please try again in 2m32.928s. Need more tokens?", 2*time.Minute + 32928*time.Millisecond},
		{"a wait that is no duration", left, 429, "", "Please try again in a moment.", 54 * time.Second},
		{"not a 429: only a limit used up", left, 503, "", "Please try again in 5s.", 0},
		{"not a 429, a limit used up", http.Header{"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"2s"}}, 503, "", "", 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.h, tt.status, tt.kind, tt.msg); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTryAgainIn(t *testing.T) {
	for _, tt := range []struct {
		msg  string
		want time.Duration
	}{
		{"", 0},
		{"Please try again in 174ms. Visit", 174 * time.Millisecond},
		{"Please try again in 18.642s.", 18642 * time.Millisecond},
		{"Please try again in 5m.", 5 * time.Minute},
		{"Please try again in 6m0s", 6 * time.Minute},
		{"Please try again in 1.5 seconds.", 0},
		{"Please try again in -1s.", 0},
		{"try again later", 0},
	} {
		if got := tryAgainIn(tt.msg); got != tt.want {
			t.Errorf("tryAgainIn(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// TestErrorEventShapes: an error event says the server's message
// whatever shape its data has, as compatible servers each write their
// own, and names the model.
func TestErrorEventShapes(t *testing.T) {
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"{\"output\":"},"finish_reason":null}]}` + "\n\n"
	for _, tt := range []struct {
		name, tail string
		want       string
	}{
		{"OpenAI's", "event: error\ndata: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n",
			"openai gpt-test: 500 Internal Server Error (server_error): The server had an error"},
		{"message at the top", "event: error\ndata: {\"message\":\"model is loading\",\"code\":503}\n\n",
			"openai gpt-test: model is loading"},
		{"error as text", "event: error\ndata: {\"error\":\"upstream timed out\"}\n\n",
			"openai gpt-test: upstream timed out"},
		{"plain text", "event: error\ndata: upstream connect error\n\n",
			"openai gpt-test: upstream connect error"},
		{"no message", "event: error\ndata:\n\n", "openai gpt-test: an error event without a message"},
		{"bare line", "{\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}}\n",
			"openai gpt-test: 429 Too Many Requests (rate_limit_exceeded): Rate limit reached"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, head+tt.tail)
			}))
			defer srv.Close()
			p, err := New(Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := gather(t, p.Generate(t.Context(), replayRequest(true)))
			if len(got.Texts) != 1 || got.Texts[0] != `{"output":` {
				t.Errorf("texts %q, want the text before the error", got.Texts)
			}
			if _, ok := errors.AsType[*provider.Error](err); !ok || err.Error() != tt.want {
				t.Errorf("error %v, want a *provider.Error %q", err, tt.want)
			}
		})
	}
}
