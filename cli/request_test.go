package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
)

// fakeOpenAI speaks enough of the Chat Completions wire format to answer
// with solution, plain or as an SSE stream.
func fakeOpenAI(t *testing.T, solution string, seen *map[string]any) *httptest.Server {
	return openaitest.Server(t, func(body []byte) string {
		if err := json.Unmarshal(body, seen); err != nil {
			t.Errorf("request body: %v", err)
		}
		return solution
	})
}

func writeIdea(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "idea.json")
	idea := `{"schema":{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]},
		"context":[{"type":"tool","tool":{"lookup":{"type":"object","properties":{"q":{"type":"string"}}}}},{"type":"input","country":"France"}]}`
	if err := os.WriteFile(path, []byte(idea), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRequestCommand(t *testing.T) {
	solution := `{"calls":[{"_tool":"lookup","q":"France"}],"output":{"capital":"Paris"}}`
	idea := writeIdea(t)
	for _, tt := range []struct {
		name       string
		args       []string
		wantOut    string
		wantErrOut string
	}{
		{"plain", []string{"--model", "vllm:m"}, "solution 0:\n{\n  \"calls\": [\n    {\n      \"_tool\": \"lookup\",\n      \"q\": \"France\"\n    }\n  ],\n  \"output\": {\n    \"capital\": \"Paris\"\n  }\n}\nusage: input 10, output 7, thinking 0, cache read 2, cache write 0\n", ""},
		{"json stream", []string{"--model", "vllm:m", "--stream", "--json"}, "", ""},
		{"stream prints calls", []string{"--model", "vllm:m", "--stream"}, "", "call 0.0: {\"_tool\":\"lookup\",\"q\":\"France\"}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen map[string]any
			srv := fakeOpenAI(t, solution, &seen)
			defer srv.Close()
			var stdout, stderr bytes.Buffer
			args := append([]string{"request", idea, "--base-url", srv.URL + "/v1"}, tt.args...)
			if code := run(context.Background(), args, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if tt.wantOut != "" && stdout.String() != tt.wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tt.wantOut)
			}
			if tt.wantErrOut != "" && stderr.String() != tt.wantErrOut {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.wantErrOut)
			}
			if strings.Contains(strings.Join(tt.args, " "), "--json") {
				var out struct {
					Solutions []json.RawMessage
					Usage     struct{ Input, Output int }
				}
				if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Solutions) != 1 || out.Usage.Input != 10 {
					t.Errorf("--json output %s: %v", stdout.String(), err)
				}
			}
			rf, _ := seen["response_format"].(map[string]any)
			if seen["model"] != "m" || rf["type"] != "json_schema" {
				t.Errorf("request body: model %v, response_format %v", seen["model"], seen["response_format"])
			}
			msgs, _ := seen["messages"].([]any)
			if len(msgs) == 0 || !strings.Contains(fmt.Sprint(msgs), "## Data: ¶input") {
				t.Errorf("messages sent: %v", msgs)
			}
		})
	}
}

func TestRequestCommandErrors(t *testing.T) {
	idea := writeIdea(t)
	typo := writeFile(t, "typo.json", `{"schema":{"type":"object"},"context":[{"type":"txt","text":"hi"}]}`)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		// The Idea's fault, before any request: the error names its file.
		{"unknown message type", []string{"request", typo, "--model", "vllm:m", "--base-url", "http://127.0.0.1:1/v1"}, 1, "acts: " + typo + `: agent: message 0 (txt): no handler for message type "txt"`},
		{"no model", []string{"request", idea, "--model", ""}, 2, "--model must be provider:model"},
		{"unknown provider", []string{"request", idea, "--model", "acme:x"}, 2, `unknown provider "acme"`},
		{"missing idea", []string{"request", "nope.json", "--model", "openai:x"}, 1, "no such file"},
		{"no solutions", []string{"request", idea, "--model", "vllm:m", "--base-url", "http://127.0.0.1:1/v1", "--n", "0"}, 2, "--n must be 1 or more, got 0"},
		{"provider error", []string{"request", idea, "--model", "vllm:m", "--base-url", "http://127.0.0.1:1/v1"}, 1, "agent: provider:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, nil, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

// TestRequestLostSolution: a solution of several that is left out (it
// stayed invalid) is said on standard error, by the index its events
// had; the others are printed, moved down.
func TestRequestLostSolution(t *testing.T) {
	idea := &agent.Idea{Schema: json.RawMessage(`{"type":"integer"}`), Context: []message.Message{message.Text("count")}}
	cfg := agent.Config{Provider: scripted.Solutions(`{"output":"one"}`, `{"output":2}`), Registry: agent.NewRegistry(), N: 2, MaxRepairs: -1,
		Logger: slog.New(slog.DiscardHandler)}
	var stdout, stderr bytes.Buffer
	if err := request(context.Background(), &Env{Stdout: &stdout, Stderr: &stderr}, cfg, "idea.json", idea, "", nil, false); err != nil {
		t.Fatal(err)
	}
	if got, want := stderr.String(), "solution 0 left out: at /output: expected null or integer, got string\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if got := stdout.String(); !strings.HasPrefix(got, "solution 0:\n{\n  \"output\": 2\n}\nusage:") {
		t.Errorf("stdout %q, want solution 0 to be the second answer", got)
	}
}

// TestRequestAsRun: request sends the context acts run would start
// with: the Idea's presets expanded, and the inputs of --input added,
// rendered as the Idea says.
func TestRequestAsRun(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := openaitest.Server(t, func(body []byte) string {
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
		return `{"output":{"capital":"Paris"}}`
	})
	idea := writeFile(t, "persona.json", `{"schema":{"type":"object"},"presets":{"persona":{"messages":[{"type":"text","role":"system","text":"You are terse."}]}},
		"context":[{"type":"preset","preset":"persona"},{"type":"text","text":"The capital?"}]}`)
	// An Idea's rendering is the run's, as acts run takes it.
	snapshot := writeFile(t, "snapshot.json", `{"schema":{"type":"object"},"rendering":"snapshot",
		"context":[{"type":"text","text":"The capital?"},{"type":"state","a":1},{"type":"state","b":2}]}`)
	for _, tt := range []struct {
		name string
		idea string
		args []string
		want []string // texts sent, in order
	}{
		{"presets", idea, nil, []string{"You are terse.", "The capital?"}},
		{"an input", idea, []string{"--input", `{"country":"France"}`}, []string{"You are terse.", "The capital?", "## Data: ¶input\nInput data MUST be treated as a structured prompt\n{\"country\":\"France\"}"}},
		{"the Idea's rendering", snapshot, nil, []string{"The capital?", "## Data: ¶state\n{\"a\":1,\"b\":2}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			bodies = nil
			mu.Unlock()
			code, _, errOut := acts(t.Context(), agent.NewRegistry(), append([]string{"request", tt.idea, "--model", "local:m1", "--base-url", srv.URL + "/v1"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 1 {
				t.Fatalf("%d requests", len(bodies))
			}
			var got []string
			for _, m := range wireMessages(t, bodies[0]) {
				got = append(got, contentText(m))
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("messages sent (-got +want):\n%s", diff)
			}
		})
	}
}

// TestJSONOutputUnescaped: --json output writes <, > and & as the model
// did, in a request's solutions and a run's summary.
func TestJSONOutputUnescaped(t *testing.T) {
	solution := `{"calls":[],"output":{"capital":"<b>Paris</b> & more"}}`
	idea := writeIdea(t)
	var seen map[string]any
	srv := fakeOpenAI(t, solution, &seen)
	want := `"<b>Paris</b> & more"`
	_, out, errOut := acts(t.Context(), nil, "request", idea, "--base-url", srv.URL+"/v1", "--model", "vllm:m", "--json")
	if !strings.Contains(out, want) {
		t.Errorf("request --json:\n%s%s", out, errOut)
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	_, out, errOut = acts(t.Context(), agent.NewRegistry(), "run", idea, "--base-url", srv.URL+"/v1", "--model", "vllm:m", "--store", db, "--id", "r", "--json")
	if !strings.Contains(out, want) {
		t.Errorf("run --json:\n%s%s", out, errOut)
	}
}

// TestRetryWaitSaid: a provider that asks to wait (a 429 with
// Retry-After) is waited for, and the wait, which can be minutes long, is
// said on standard error rather than left to look like a hang.
func TestRetryWaitSaid(t *testing.T) {
	answer := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	target, _ := url.Parse(answer.URL)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer srv.Close()
	idea := writeFile(t, "idea.json", `{"schema":{"type":"object"},"context":[{"type":"input","country":"France"}]}`)
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "request", idea, "--model", "local:m1", "--base-url", srv.URL)
	if code != 0 || !strings.Contains(out, `"capital": "Paris"`) {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	want := "acts: local:m1: 429 Too Many Requests (rate_limit_exceeded); retrying in 1s\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	// A short backoff (a 500 with no Retry-After) is not worth a line:
	// runs with many calls would print one per call.
	requests.Store(0)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"boom"}}`)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer plain.Close()
	code, out, errOut = acts(t.Context(), agent.NewRegistry(), "request", idea, "--model", "local:m1", "--base-url", plain.URL)
	if code != 0 || !strings.Contains(out, `"capital": "Paris"`) || errOut != "" {
		t.Errorf("a short backoff: exit %d, %q, stderr %q; want nothing on stderr", code, out, errOut)
	}
}

// TestRetryWaitSaidConcurrently: the calls of a plan that wait for the
// provider at once each say so on standard error, a line each, without
// writing into it at once.
func TestRetryWaitSaidConcurrently(t *testing.T) {
	answer := openaitest.Server(t, func([]byte) string { return `{"output":1}` })
	target, _ := url.Parse(answer.URL)
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= 6 { // the first request of each call
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer srv.Close()
	// Two latent calls, which run at once.
	idea := writeFile(t, "plan.json", `{"schema":{"type":"object"},"context":[
		{"type":"tool","tool":{"guess":{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}}},
		{"type":"plan","plan":[{"_tool":"guess","q":"a","_outputPath":"†state.a"},{"_tool":"guess","q":"b","_outputPath":"†state.b"},
		{"_tool":"guess","q":"c","_outputPath":"†state.c"},{"_tool":"guess","q":"d","_outputPath":"†state.d"},
		{"_tool":"guess","q":"e","_outputPath":"†state.e"},{"_tool":"guess","q":"f","_outputPath":"†state.f"}]}]}`)
	code, _, errOut := acts(t.Context(), agent.NewRegistry(), "run", idea, "--model", "local:m1", "--base-url", srv.URL, "--store", "memory:")
	if code != 0 {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	line := "acts: local:m1: 429 Too Many Requests (rate_limit_exceeded); retrying in 1s\n"
	if n := strings.Count(errOut, line); n != 6 {
		t.Errorf("stderr %q has the wait %d times, want 6", errOut, n)
	}
}

// TestRetryReason: the notice of a retry says briefly why: the status of
// an error response and the provider's code, not its long message; the
// timeout that fired; or the first line of another error, cut short.
func TestRetryReason(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"rate limit", &provider.Error{Provider: "openai", Model: "gpt-5", Status: 429, Code: "rate_limit_exceeded", Err: errors.New("Rate limit reached for gpt-5 in organization org-1 on tokens per min")}, "429 Too Many Requests (rate_limit_exceeded)"},
		{"server error", &provider.Error{Provider: "openai", Status: 503, Err: errors.New("busy")}, "503 Service Unavailable"},
		{"overloaded", &provider.Error{Provider: "anthropic", Status: 529, Code: "overloaded_error", Err: errors.New("Overloaded")}, "529 Overloaded (overloaded_error)"},
		{"error event without a status", &provider.Error{Provider: "anthropic", Code: "api_error", Err: errors.New("Internal server error")}, "api_error: Internal server error"},
		{"timeout", &provider.TimeoutError{Provider: "openai", Model: "gpt-5", Phase: provider.PhaseFirstByte, After: time.Minute}, "no first byte within 1m0s"},
		{"no answer", fmt.Errorf("%w: %w", provider.ErrNoAnswer, errors.New("connection refused")), "provider: no answer: connection refused"},
		{"first line only", errors.New("refused\nand more"), "refused"},
		{"cut short", errors.New(long), long[:100] + "…"},
		{"wrapped error response", fmt.Errorf("attempt: %w", &provider.Error{Provider: "gemini", Status: 500}), "500 Internal Server Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryReason(tt.err); got != tt.want {
				t.Errorf("retryReason(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
