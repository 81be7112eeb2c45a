package anthropic

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// replay answers every request with the bytes of a testdata file.
func replay(t *testing.T, file string, status int, header http.Header) http.Handler {
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		switch {
		case w.Header().Get("Content-Type") != "":
		case strings.HasSuffix(file, ".sse"):
			w.Header().Set("Content-Type", "text/event-stream")
		case strings.HasSuffix(file, ".json"):
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		w.Write(body)
	})
}

// TestReplay replays recorded responses of the Messages API.
func TestReplay(t *testing.T) {
	const answer = `{"output":{"answer":"Paris","notes":["capital since 508"]},"calls":[]}`
	for _, tt := range []struct {
		name   string
		file   string
		stream bool
		tool   bool
		want   *provider.Result
	}{
		{"plain", "message.json", false, false, &provider.Result{
			Texts: []string{answer}, Thinking: []string{""}, FinishReasons: []string{"end_turn"},
			Usage: provider.Usage{Input: 412, Output: 31, CacheRead: 2048},
		}},
		{"plain thinking", "message_thinking.json", false, false, &provider.Result{
			Texts:         []string{`{"output":{"answer":"Paris"}}`},
			Thinking:      []string{"The user wants the capital of France. That is Paris."},
			FinishReasons: []string{"end_turn"},
			Usage:         provider.Usage{Input: 95, Output: 14, Thinking: 226, CacheWrite: 1024},
		}},
		{"plain tool", "message_tool.json", false, true, &provider.Result{
			Texts:    []string{`{"output":{"answer":"Paris"},"calls":[{"_tool":"lookup","q":"x\"y"}]}`},
			Thinking: []string{""}, FinishReasons: []string{"tool_use"},
			Usage: provider.Usage{Input: 472, Output: 58},
		}},
		{"stream", "stream.sse", true, false, &provider.Result{
			Texts: []string{answer}, Thinking: []string{""}, FinishReasons: []string{"end_turn"},
			Usage: provider.Usage{Input: 412, Output: 31, CacheRead: 2048},
		}},
		{"stream thinking", "stream_thinking.sse", true, false, &provider.Result{
			Texts:         []string{`{"output":{"answer":"Paris"}}`},
			Thinking:      []string{"The user wants the capital of France. That is Paris."},
			FinishReasons: []string{"end_turn"},
			Usage:         provider.Usage{Input: 95, Output: 14, Thinking: 226, CacheWrite: 1024},
		}},
		{"stream redacted thinking", "stream_redacted.sse", true, false, &provider.Result{
			Texts:         []string{`{"output":{"answer":"Paris"}}`},
			Thinking:      []string{"That is Paris."},
			FinishReasons: []string{"end_turn"},
			Usage:         provider.Usage{Input: 95, Output: 14, Thinking: 226, CacheWrite: 1024},
		}},
		{"stream tool", "stream_tool.sse", true, true, &provider.Result{
			Texts:    []string{`{"output": {"answer": "Paris"}, "calls": [{"_tool": "lookup", "q": "x\"y"}]}`},
			Thinking: []string{""}, FinishReasons: []string{"tool_use"},
			Usage: provider.Usage{Input: 472, Output: 58},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestServer(t, replay(t, tt.file, http.StatusOK, nil), Config{ToolOutput: tt.tool})
			var chunks int
			got, err := provider.Collect(func(yield func(*provider.Chunk, error) bool) {
				for c, err := range p.Generate(t.Context(), request(tt.stream, 1)) {
					chunks++
					if !yield(c, err) {
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("result (-got +want):\n%s", diff)
			}
			if !tt.stream && chunks != 1 {
				t.Errorf("%d chunks, want 1", chunks)
			}
		})
	}
}

// TestReplayErrors replays error responses and broken streams.
func TestReplayErrors(t *testing.T) {
	date := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		handler  func(t *testing.T) http.Handler
		stream   bool
		wantErr  *provider.Error // nil: wantIs
		wantIs   error
		wantText string // received before the error
	}{
		{
			name: "rate limit",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_rate_limit.json", http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}})
			},
			wantErr: &provider.Error{Status: 429, Code: "rate_limit_error", RetryAfter: 30 * time.Second,
				Err: errors.New("This request would exceed your organization's rate limit of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.")},
		},
		{
			name: "retry-after date",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_rate_limit.json", http.StatusTooManyRequests, http.Header{
					"Date":        {date.Format(http.TimeFormat)},
					"Retry-After": {date.Add(90 * time.Second).Format(http.TimeFormat)},
				})
			},
			stream: true,
			wantErr: &provider.Error{Status: 429, Code: "rate_limit_error", RetryAfter: 90 * time.Second,
				Err: errors.New("This request would exceed your organization's rate limit of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.")},
		},
		{
			name: "rate limit reset",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_rate_limit.json", http.StatusTooManyRequests, http.Header{
					"Date": {date.Format(http.TimeFormat)},
					// The input tokens reset in a minute; the requests
					// left are not used up, so their reset is no wait.
					"Anthropic-Ratelimit-Input-Tokens-Remaining": {"0"},
					"Anthropic-Ratelimit-Input-Tokens-Reset":     {date.Add(time.Minute).UTC().Format(time.RFC3339)},
					"Anthropic-Ratelimit-Requests-Remaining":     {"12"},
					"Anthropic-Ratelimit-Requests-Reset":         {date.Add(5 * time.Minute).UTC().Format(time.RFC3339)},
				})
			},
			wantErr: &provider.Error{Status: 429, Code: "rate_limit_error", RetryAfter: time.Minute,
				Err: errors.New("This request would exceed your organization's rate limit of 50,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.")},
		},
		{
			name: "overloaded",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_overloaded.json", 529, nil)
			},
			stream:  true,
			wantErr: &provider.Error{Status: 529, Code: "overloaded_error", Err: errors.New("Overloaded")},
		},
		{
			name: "invalid request",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_invalid_request.json", http.StatusBadRequest, nil)
			},
			wantErr: &provider.Error{Status: 400, Code: "invalid_request_error",
				Err: errors.New("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")},
		},
		{
			name: "gateway page",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "error_gateway.html", http.StatusBadGateway, http.Header{"Content-Type": {"text/html"}})
			},
			// URL stands for the server's.
			wantErr: &provider.Error{Status: 502,
				Err: errors.New(`URL/v1/messages answered an HTML page titled "502 Bad Gateway" (upstream connect error), not the API's answer: a proxy's page, or a base URL that is not the API's?`)},
		},
		{
			name: "overloaded inside the stream",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "stream_overloaded.sse", http.StatusOK, nil)
			},
			stream:   true,
			wantErr:  &provider.Error{Status: 529, Code: "overloaded_error", Err: errors.New("Overloaded")},
			wantText: `{"output":{"answer"`,
		},
		{
			name: "stream ends without message_stop",
			handler: func(t *testing.T) http.Handler {
				return replay(t, "stream_truncated.sse", http.StatusOK, nil)
			},
			stream:   true,
			wantIs:   provider.ErrTruncated,
			wantText: `{"output":{"answer":"Paris","notes":["capital`,
		},
		{
			name:     "connection cut",
			handler:  cut,
			stream:   true,
			wantIs:   provider.ErrTruncated,
			wantText: `{"output":{"answer":"Paris","notes":["capital`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, srv := newTestServer(t, tt.handler(t), Config{})
			r, err := provider.Collect(p.Generate(t.Context(), request(tt.stream, 1)))
			if tt.wantErr != nil {
				tt.wantErr.Provider, tt.wantErr.Model = "anthropic", testModel
				pe, ok := errors.AsType[*provider.Error](err)
				if !ok {
					t.Fatalf("got %v, want a *provider.Error", err)
				}
				if diff := cmp.Diff(strings.ReplaceAll(pe.Error(), srv.URL, "URL"), tt.wantErr.Error()); diff != "" {
					t.Errorf("error (-got +want):\n%s", diff)
				}
				if pe.Status != tt.wantErr.Status || pe.Code != tt.wantErr.Code || pe.RetryAfter != tt.wantErr.RetryAfter {
					t.Errorf("got %+v, want %+v", pe, tt.wantErr)
				}
			} else if !errors.Is(err, tt.wantIs) {
				t.Fatalf("got %v, want %v", err, tt.wantIs)
			}
			var text string
			if len(r.Texts) > 0 {
				text = r.Texts[0]
			}
			if text != tt.wantText {
				t.Errorf("text before the error %q, want %q", text, tt.wantText)
			}
		})
	}
}

// cut sends the first part of stream.sse and closes the connection in the
// middle of an event.
func cut(t *testing.T) http.Handler {
	body, err := os.ReadFile(filepath.Join("testdata", "stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	end := strings.Index(string(body), " since 508") // inside the third text delta
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.Write(body[:end])
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
}
