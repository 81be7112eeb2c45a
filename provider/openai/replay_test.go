package openai

import (
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// gathered is a whole answer, by choice index.
type gathered struct {
	Texts, Thinking, FinishReasons []string
	Usage                          *provider.Usage
	Model                          string // the model the usage's chunk names
	ResponseID                     string // the response id the usage's chunk says
}

// gather drains seq like provider.Collect, which cannot take interleaved
// choices yet, and checks the stream's invariants on the way: no chunk of
// a choice after its Done chunk, one Done per choice, usage and model on
// the last chunk only, nothing after an error.
func gather(t *testing.T, seq iter.Seq2[*provider.Chunk, error]) (gathered, error) {
	t.Helper()
	var g gathered
	done := map[int]bool{}
	var err error
	for c, e := range seq {
		if err != nil {
			t.Errorf("yielded %+v, %v after the error %v", c, e, err)
		}
		if e != nil {
			err = e
			continue
		}
		if g.Usage != nil {
			t.Errorf("chunk %+v after the chunk with the usage", c)
		}
		if done[c.Index] && c.Usage == nil {
			t.Errorf("chunk %+v after the Done chunk of choice %d", c, c.Index)
		}
		for len(g.Texts) <= c.Index {
			g.Texts, g.Thinking, g.FinishReasons = append(g.Texts, ""), append(g.Thinking, ""), append(g.FinishReasons, "")
		}
		g.Texts[c.Index] += c.Text
		g.Thinking[c.Index] += c.Thinking
		if c.Done {
			if done[c.Index] {
				t.Errorf("second Done chunk for choice %d", c.Index)
			}
			done[c.Index] = true
			g.FinishReasons[c.Index] = c.FinishReason
		}
		if (c.Model != "" || c.ResponseID != "") && c.Usage == nil {
			t.Errorf("chunk %+v names a model or a response without the usage", c)
		}
		g.Usage, g.Model, g.ResponseID = c.Usage, c.Model, c.ResponseID
	}
	return g, err
}

// apiErr is a *provider.Error with its message as text, for comparing.
type apiErr struct {
	Provider   string
	Status     int
	Code       string
	RetryAfter time.Duration
	Message    string
}

func asAPIErr(err error) *apiErr {
	pe, ok := errors.AsType[*provider.Error](err)
	if !ok {
		return nil
	}
	a := &apiErr{Provider: pe.Provider, Status: pe.Status, Code: pe.Code, RetryAfter: pe.RetryAfter}
	if pe.Err != nil {
		a.Message = pe.Err.Error()
	}
	return a
}

func replayRequest(stream bool) *provider.Request {
	return &provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Text: "What is the capital of France?"}},
		Schema:   []byte(`{"type":"object","properties":{"output":{}},"required":["output"]}`),
		Stream:   stream,
	}
}

func TestReplay(t *testing.T) {
	const paris = `{"output":{"answer":"Paris"},"calls":null}`
	for _, tt := range []struct {
		name   string
		file   string
		stream bool
		want   gathered
	}{
		{
			name: "plain", file: "completion.http",
			want: gathered{Texts: []string{paris}, Thinking: []string{""}, FinishReasons: []string{"stop"},
				Usage: &provider.Usage{Input: 93, Output: 18, Thinking: 128, CacheRead: 1024}, Model: "gpt-5-mini-2025-08-07", ResponseID: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"},
		},
		{
			name: "plain two choices", file: "completion_n2.http",
			want: gathered{Texts: []string{`{"output":1}`, `{"output":2}`}, Thinking: []string{"", ""},
				FinishReasons: []string{"stop", "length"}, Usage: &provider.Usage{Input: 52, Output: 12}, Model: "gpt-4o-2024-08-06", ResponseID: "chatcmpl-C1xYz8QeR2sT4uV6wX8yZ0aB2cD4e"},
		},
		{
			name: "plain DeepSeek reasoning_content", file: "deepseek_reasoning.http",
			want: gathered{Texts: []string{`{"output":{"answer":"Paris"}}`},
				Thinking:      []string{"The user asks for the capital of France. That is Paris."},
				FinishReasons: []string{"stop"}, Usage: &provider.Usage{Input: 32, Output: 12, Thinking: 45, CacheRead: 64}, Model: "deepseek-reasoner", ResponseID: "930c60df-bf64-41c9-a88e-3ec75f81e00e"},
		},
		{
			name: "stream", file: "stream.http", stream: true,
			want: gathered{Texts: []string{paris}, Thinking: []string{""}, FinishReasons: []string{"stop"},
				Usage: &provider.Usage{Input: 93, Output: 18, Thinking: 128, CacheRead: 1024}, Model: "gpt-5-mini-2025-08-07", ResponseID: "chatcmpl-C3aBcDeFgHiJkLmNoPqRsTuVwXyZ1"},
		},
		{
			name: "stream two interleaved choices", file: "stream_n2.http", stream: true,
			want: gathered{Texts: []string{`{"output":1}`, `{"output":2}`}, Thinking: []string{"", ""},
				FinishReasons: []string{"stop", "stop"}, Usage: &provider.Usage{Input: 52, Output: 12}, Model: "gpt-4o-2024-08-06", ResponseID: "chatcmpl-C4bCdEfGhIjKlMnOpQrStUvWxYz2"},
		},
		{
			name: "stream vLLM reasoning_content", file: "stream_vllm_reasoning.http", stream: true,
			want: gathered{Texts: []string{`{"output":"Paris"}`}, Thinking: []string{"The capital of France is Paris."},
				FinishReasons: []string{"stop"}, Usage: &provider.Usage{Input: 31, Output: 21}, Model: "Qwen/Qwen3-8B", ResponseID: "chatcmpl-6f0a2b3c4d5e4f60a1b2c3d4e5f60718"},
		},
		{
			// ik_llama.cpp (and llama-server before it sent [DONE]) ends the
			// stream after the finish_reason, whose chunk has the usage.
			name: "stream without [DONE]", file: "stream_no_done.http", stream: true,
			want: gathered{Texts: []string{`{"output":"Paris"}`}, Thinking: []string{""}, FinishReasons: []string{"stop"},
				Usage: &provider.Usage{Input: 26, Output: 7}, Model: "qwen3-8b", ResponseID: "chatcmpl-Qm3xT9bYk2Lw8RfZ"},
		},
		{
			name: "stream Ollama reasoning", file: "stream_ollama.http", stream: true,
			want: gathered{Texts: []string{`{"output": "Paris"}`}, Thinking: []string{"Okay, Paris."},
				FinishReasons: []string{"stop"}, Usage: &provider.Usage{Input: 24, Output: 19}, Model: "qwen3:8b", ResponseID: "chatcmpl-812"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCapture(t, readRecorded(t, tt.file))
			p, err := New(Config{BaseURL: srv.url(), APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := gather(t, p.Generate(context.Background(), replayRequest(tt.stream)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("(-got +want)\n%s", diff)
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	for _, tt := range []struct {
		name     string
		file     string
		stream   bool
		wantText string  // what arrived before the error
		want     *apiErr // nil: not a *provider.Error
		check    func(t *testing.T, err error)
	}{
		{
			// Azure refuses a prompt its filter blocks before answering.
			name: "Azure prompt filtered", file: "azure_prompt_filtered.http",
			want: &apiErr{Provider: "openai", Status: 400, Code: "content_filter",
				Message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766"},
		},
		{
			name: "context length exceeded", file: "context_length.http",
			want: &apiErr{Provider: "openai", Status: 400, Code: "context_length_exceeded",
				Message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages."},
		},
		{
			// No Retry-After: the wait is the reset of the limit used up.
			name: "rate limit, its reset in x-ratelimit headers", file: "rate_limit_reset.http",
			want: &apiErr{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", RetryAfter: 6400 * time.Millisecond,
				Message: "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 29500, Requested 1117. Please try again in 6.4s. Visit https://platform.openai.com/account/rate-limits to learn more."},
		},
		{
			// A request bigger than what is left: no limit shows 0
			// remaining, and the message says when enough is back.
			name: "rate limit, the request bigger than what is left", file: "rate_limit_over.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", RetryAfter: 10 * time.Second,
				Message: "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 27000, Requested 8000. Please try again in 10s. Visit https://platform.openai.com/account/rate-limits to learn more."},
		},
		{
			name: "rate limit", file: "rate_limit.http",
			want: &apiErr{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", RetryAfter: 1500 * time.Millisecond,
				Message: "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 30000, Requested 1117. Please try again in 1.5s. Visit https://platform.openai.com/account/rate-limits to learn more."},
		},
		{
			name: "rate limit, streamed", file: "rate_limit.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", RetryAfter: 1500 * time.Millisecond,
				Message: "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 30000, Requested 1117. Please try again in 1.5s. Visit https://platform.openai.com/account/rate-limits to learn more."},
		},
		{
			name: "invalid schema", file: "bad_request.http",
			want: &apiErr{Provider: "openai", Status: 400, Code: "invalid_request_error",
				Message: "Invalid schema for response_format 'solution': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'notes'."},
		},
		{
			name: "bad key", file: "unauthorized.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 401, Code: "invalid_api_key",
				Message: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys."},
		},
		{
			name: "server error", file: "server_error.http",
			want: &apiErr{Provider: "openai", Status: 500, Code: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			name: "overloaded, Retry-After as a date", file: "overloaded_date.http",
			want: &apiErr{Provider: "openai", Status: 503, Code: "server_error", RetryAfter: 30 * time.Second,
				Message: "The engine is currently overloaded, please try again later"},
		},
		{
			name: "Ollama model not found", file: "ollama_not_found.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 404, Code: "api_error",
				Message: `model "llama9" not found, try pulling it first`},
		},
		{
			// Ollama answers 500 to a schema llama.cpp's grammar converter
			// refuses: the same request fails again, so it is no
			// temporary error, and the message says what to look for.
			name: "Ollama refuses the schema", file: "ollama_invalid_schema.http",
			want: &apiErr{Provider: "openai", Status: 500, Code: "invalid_json_schema",
				Message: "invalid JSON schema in format (the server could not turn the schema into a grammar; llama.cpp's converter takes a pattern only written ^…$)"},
		},
		{
			name: "vLLM top-level error", file: "vllm_bad_request.http",
			want: &apiErr{Provider: "openai", Status: 400, Code: "BadRequestError",
				Message: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (8000 in the messages, 32000 in the completion). Please reduce the length of the messages or completion."},
		},
		{
			// OpenRouter answers 200 when the upstream provider failed
			// after the request was accepted, with the error in the body.
			name: "OpenRouter error in a 200 body", file: "openrouter_error_200.http",
			want: &apiErr{Provider: "openai", Status: 429,
				Message: "Provider returned error: z-ai/glm-4.5-air:free is temporarily rate-limited upstream. Please retry shortly, or add your own key to accumulate your rate limits: https://openrouter.ai/settings/integrations"},
		},
		{
			// OpenRouter's message names no cause; the model's provider's
			// error is in metadata.raw.
			name: "OpenRouter error of the model's provider", file: "openrouter_provider_error.http",
			want: &apiErr{Provider: "openai", Status: 400,
				Message: "Provider returned error: Invalid schema for response_format 'solution': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'notes'."},
		},
		{
			// llama-server and OpenRouter repeat the status as a numeric
			// code, which names nothing the status does not: the type does.
			name: "llama-server error, its status in code", file: "llamacpp_schema_error.http",
			want: &apiErr{Provider: "openai", Status: 400, Code: "invalid_request_error",
				Message: "JSON schema conversion failed:\nPattern must start with '^' and end with '$'"},
		},
		{
			name: "OpenRouter error, its status in code", file: "openrouter_no_credits.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 402,
				Message: "This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only afford 1205. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account"},
		},
		{
			name: "HTML from a gateway", file: "gateway_html.http",
			// URL stands for the server's.
			want: &apiErr{Provider: "openai", Status: 502,
				Message: `URL/v1/chat/completions answered an HTML page titled "502 Bad Gateway" (502 Bad Gateway nginx), not the API's answer: a proxy's page, or a base URL that is not the API's?`},
		},
		{
			name: "error event mid-stream", file: "stream_error_event.http", stream: true,
			wantText: `{"output":`,
			want: &apiErr{Provider: "openai", Status: 500, Code: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			name: "error event first", file: "stream_error_first.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 500, Code: "server_error",
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			// OpenRouter keeps the connection alive with SSE comments and
			// reports an error after the first text with finish_reason
			// "error" beside it.
			name: "OpenRouter comments, then an error event mid-stream", file: "stream_openrouter_error.http", stream: true,
			wantText: `{"output":`,
			want:     &apiErr{Provider: "openai", Status: 500, Code: "server_error", Message: "Provider disconnected unexpectedly"},
		},
		{
			name: "vLLM error event, its status in code", file: "stream_error_vllm.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 503, Code: "ServiceUnavailableError", Message: "The engine is overloaded."},
		},
		{
			// LiteLLM's proxy writes the status as a string.
			name: "LiteLLM error event, its status a string in code", file: "stream_error_litellm.http", stream: true,
			want: &apiErr{Provider: "openai", Status: 429, Code: "429", RetryAfter: 2 * time.Second,
				Message: "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for gpt-4o-mini. Please try again in 2s."},
		},
		{
			name: "truncated stream", file: "stream_truncated.http", stream: true,
			wantText: `{"output":{"answer":`,
			check: func(t *testing.T, err error) {
				if !errors.Is(err, provider.ErrTruncated) {
					t.Errorf("got %v, want provider.ErrTruncated", err)
				}
				if want := "provider: stream ended early: openai: the stream ended before the finish_reason of choice 0"; err.Error() != want {
					t.Errorf("got %q, want %q", err, want)
				}
			},
		},
		{
			name: "refusal", file: "refusal.http",
			check: func(t *testing.T, err error) {
				re, ok := errors.AsType[*RefusalError](err)
				if !ok || re.Index != 0 || re.Message != "I'm sorry, I cannot assist with that request." {
					t.Errorf("got %v, want a *RefusalError", err)
				}
			},
		},
		{
			name: "refusal, streamed", file: "stream_refusal.http", stream: true,
			check: func(t *testing.T, err error) {
				if want := "openai: solution 0 refused: I'm sorry, I cannot assist with that request."; err == nil || err.Error() != want {
					t.Errorf("got %v, want %q", err, want)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCapture(t, readRecorded(t, tt.file))
			p, err := New(Config{BaseURL: srv.url(), APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := gather(t, p.Generate(context.Background(), replayRequest(tt.stream)))
			if err == nil {
				t.Fatal("no error")
			}
			if text := strings.Join(got.Texts, ""); text != tt.wantText {
				t.Errorf("text before the error %q, want %q", text, tt.wantText)
			}
			if tt.want != nil {
				got := asAPIErr(err)
				if got != nil {
					got.Message = strings.ReplaceAll(got.Message, strings.TrimSuffix(srv.url(), "/v1"), "URL")
				}
				if diff := cmp.Diff(got, tt.want); diff != "" {
					t.Errorf("%v (-got +want)\n%s", err, diff)
				}
				pe, _ := errors.AsType[*provider.Error](err)
				wantTemp := (tt.want.Status == 429 || tt.want.Status >= 500) && tt.want.Code != provider.CodeInvalidSchema
				if pe.Temporary() != wantTemp {
					t.Errorf("Temporary() = %v", pe.Temporary())
				}
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

// TestErrorText pins the text of errors, which reaches logs and replays.
func TestErrorText(t *testing.T) {
	srv := newCapture(t, readRecorded(t, "rate_limit.http"))
	p, err := New(Config{BaseURL: srv.url(), Model: "m", Name: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = provider.Collect(p.Generate(context.Background(), replayRequest(false)))
	want := "vllm m: 429 Too Many Requests (rate_limit_exceeded): Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, Used 30000, Requested 1117. Please try again in 1.5s. Visit https://platform.openai.com/account/rate-limits to learn more."
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestRetry checks that provider.Retry retries a rate limit after the
// delay the server asked for, the SDK's own retries being off, and a
// stream whose first event is a server error.
func TestRetry(t *testing.T) {
	for _, tt := range []struct {
		name, first, then string
		stream            bool
		slept             []time.Duration
	}{
		{"rate limit", "rate_limit.http", "completion.http", false, []time.Duration{1500 * time.Millisecond}},
		{"error event first", "stream_error_first.http", "stream.http", true, []time.Duration{provider.DefaultRetryBase}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCapture(t, readRecorded(t, tt.first), readRecorded(t, tt.then))
			p, err := New(Config{BaseURL: srv.url(), APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			var slept []time.Duration
			r := provider.Retry(p, provider.RetryConfig{Sleep: func(ctx context.Context, d time.Duration) error {
				slept = append(slept, d)
				return nil
			}})
			got, err := provider.Collect(r.Generate(context.Background(), replayRequest(tt.stream)))
			if err != nil {
				t.Fatal(err)
			}
			// A backoff is drawn from the upper half of its base.
			backoff := len(slept) == 1 && tt.slept[0] == provider.DefaultRetryBase && slept[0] >= tt.slept[0]/2 && slept[0] <= tt.slept[0]
			if len(srv.requests) != 2 || !cmp.Equal(slept, tt.slept) && !backoff || got.Texts[0] == "" {
				t.Errorf("%d requests, slept %v, got %+v", len(srv.requests), slept, got)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	srv := newCapture(t, readRecorded(t, "completion.http"))
	p, err := New(Config{BaseURL: srv.url(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	srv.srv.Close()
	for _, stream := range []bool{false, true} {
		_, err = provider.Collect(p.Generate(context.Background(), replayRequest(stream)))
		pe, ok := errors.AsType[*provider.Error](err)
		if !ok || pe.Status != 0 || pe.Err == nil || pe.Provider != "openai" {
			t.Errorf("stream=%v: got %v, want a *provider.Error with status 0", stream, err)
		}
	}
}

// TestConnectionCut: a connection that breaks in the middle of the body
// (not a clean end of the stream) is a truncation too.
func TestConnectionCut(t *testing.T) {
	rec := readRecorded(t, "stream.http")
	first, _, _ := strings.Cut(string(rec.body), "\n\ndata: {\"id\":\"chatcmpl-C3aBcDeFgHiJkLmNoPqRsTuVwXyZ1\",\"object\":\"chat.completion.chunk\",\"created\":1741570400,\"model\":\"gpt-5-mini-2025-08-07\",\"service_tier\":\"default\",\"system_fingerprint\":null,\"choices\":[{\"index\":0,\"delta\":{},")
	srv := newCapture(t)
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that closing sends FIN, not RST
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		// Chunked encoding without its last, empty chunk.
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		body := first + "\n\n"
		buf.WriteString(strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n")
		buf.Flush()
	})
	p, err := New(Config{BaseURL: srv.url(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := gather(t, p.Generate(context.Background(), replayRequest(true)))
	if !errors.Is(err, provider.ErrTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want provider.ErrTruncated wrapping io.ErrUnexpectedEOF", err)
	}
	if want := `{"output":{"answer":"Paris"},"calls":null}`; got.Texts[0] != want {
		t.Errorf("text %q, want %q", got.Texts[0], want)
	}
}
