package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/providertest"
)

// This file holds the fake Chat Completions servers the tests talk to.

// recorded is an HTTP response read from a testdata/*.http file: a status
// line, headers, a blank line and the body, as the server sent them.
type recorded struct {
	status int
	header http.Header
	body   []byte
}

func readRecorded(t *testing.T, name string) recorded {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	line, err := tp.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(line, " ")
	status, err := strconv.Atoi(code[:3])
	if err != nil {
		t.Fatalf("%s: status line %q", name, line)
	}
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("%s: headers: %v", name, err)
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		t.Fatal(err)
	}
	return recorded{status: status, header: http.Header(hdr), body: body}
}

// write replays r; the body goes out in pieces, flushed, as a stream would.
func (r recorded) write(w http.ResponseWriter) {
	for k, v := range r.header {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(r.status)
	f, _ := w.(http.Flusher)
	for part := range bytes.SplitAfterSeq(r.body, []byte("\n\n")) {
		w.Write(part)
		if f != nil {
			f.Flush()
		}
	}
}

// capture is a server that records each request and answers with the
// given recorded responses in turn (the last one repeats).
type capture struct {
	srv       *httptest.Server
	mu        sync.Mutex
	requests  []*http.Request
	bodies    [][]byte
	responses []recorded
}

func newCapture(t *testing.T, responses ...recorded) *capture {
	c := &capture{responses: responses}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		c.mu.Lock()
		c.requests = append(c.requests, r)
		c.bodies = append(c.bodies, body)
		res := c.responses[min(len(c.requests), len(c.responses))-1]
		c.mu.Unlock()
		res.write(w)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) url() string { return c.srv.URL + "/v1" }

func (c *capture) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) == 0 {
		t.Fatal("the server received no request")
	}
	return c.requests[len(c.requests)-1], c.bodies[len(c.bodies)-1]
}

// wireRequest is what the fake server reads from a request body.
type wireRequest struct {
	Model           string `json:"model"`
	Stream          bool   `json:"stream"`
	N               int    `json:"n"`
	ReasoningEffort string `json:"reasoning_effort"`
	Messages        []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// fake answers providertest scenarios in the Chat Completions wire format,
// built from the scenario: a chat.completion object, or an SSE stream of
// chat.completion.chunk objects ending with a usage chunk and [DONE].
func fake(t *testing.T, sc providertest.Scenario) provider.Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		checkWireRequest(t, r, req, sc)
		if sc.Status != 0 && sc.Status != http.StatusOK {
			writeError(w, sc)
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			w.Write(completionJSON(sc))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		f := w.(http.Flusher)
		for _, event := range streamEvents(sc) {
			io.WriteString(w, "data: "+event+"\n\n")
			f.Flush()
		}
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkWireRequest(t *testing.T, r *http.Request, req wireRequest, sc providertest.Scenario) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		t.Errorf("got %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if req.Model != "gpt-test" {
		t.Errorf("model %q, want the configured default", req.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		t.Errorf("messages %+v", req.Messages)
	}
	js := req.ResponseFormat.JSONSchema
	if req.ResponseFormat.Type != "json_schema" || js.Name != "solution" || !js.Strict ||
		!bytes.Contains(js.Schema, []byte(`"additionalProperties":false`)) {
		t.Errorf("response_format %+v %s", req.ResponseFormat, js.Schema)
	}
	if n := max(1, req.N); len(sc.Solutions) > 1 && n != len(sc.Solutions) {
		t.Errorf("n %d, want %d", n, len(sc.Solutions))
	}
	if req.Stream != (req.StreamOptions != nil && req.StreamOptions.IncludeUsage) {
		t.Errorf("stream %v with stream_options %+v", req.Stream, req.StreamOptions)
	}
	if sc.Thinking != "" && req.ReasoningEffort != "low" {
		t.Errorf("reasoning_effort %q for a 1024-token budget, want low", req.ReasoningEffort)
	}
}

func writeError(w http.ResponseWriter, sc providertest.Scenario) {
	w.Header().Set("Content-Type", "application/json")
	if sc.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(sc.RetryAfter.Seconds())))
	}
	typ, code := "invalid_request_error", "null"
	switch {
	case sc.Status == http.StatusTooManyRequests:
		typ, code = "requests", `"rate_limit_exceeded"`
	case sc.Status >= 500:
		typ = "server_error"
	}
	w.WriteHeader(sc.Status)
	fmt.Fprintf(w, `{"error":{"message":"%s","type":"%s","param":null,"code":%s}}`,
		http.StatusText(sc.Status)+" from the fake server", typ, code)
}

// usageJSON encodes normalised usage in OpenAI's fields, where the prompt
// includes the cached tokens and the completion the reasoning tokens.
func usageJSON(u provider.Usage) string {
	prompt, completion := u.Input+u.CacheRead+u.CacheWrite, u.Output+u.Thinking
	return fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":%d,"audio_tokens":0},`+
		`"completion_tokens_details":{"reasoning_tokens":%d,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
		prompt, completion, prompt+completion, u.CacheRead, u.Thinking)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const chunkHead = `{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1741570400,"model":"gpt-test","service_tier":"default","system_fingerprint":"fp_fake",`

func completionJSON(sc providertest.Scenario) []byte {
	var choices []string
	for i, s := range sc.Solutions {
		reasoning := ""
		if i == 0 && sc.Thinking != "" {
			reasoning = `,"reasoning_content":` + quote(sc.Thinking) // DeepSeek, vLLM
		}
		choices = append(choices, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]%s},"logprobs":null,"finish_reason":"stop"}`,
			i, quote(s), reasoning))
	}
	return fmt.Appendf(nil, `{"id":"chatcmpl-fake","object":"chat.completion","created":1741570400,"model":"gpt-test","choices":[%s],"usage":%s,"service_tier":"default","system_fingerprint":"fp_fake"}`,
		strings.Join(choices, ","), usageJSON(sc.Usage))
}

// streamEvents splits each solution into 7-byte deltas, each choice ending
// with its finish_reason, then sends the usage chunk and [DONE]; a
// truncated stream stops halfway through the first solution. The choices
// follow each other here: provider.Collect cannot take interleaved
// choices yet (see testdata/stream_n2.http and gather for those).
func streamEvents(sc providertest.Scenario) []string {
	delta := func(i int, d string) string {
		return fmt.Sprintf(chunkHead+`"choices":[{"index":%d,"delta":%s,"logprobs":null,"finish_reason":null}],"usage":null}`, i, d)
	}
	var events []string
	for i := range sc.Solutions {
		events = append(events, delta(i, `{"role":"assistant","content":"","refusal":null}`))
	}
	if t := sc.Thinking; t != "" { // in two deltas, as Ollama and vLLM send it
		h := len(t) / 2
		events = append(events, delta(0, `{"reasoning":`+quote(t[:h])+`}`), delta(0, `{"reasoning":`+quote(t[h:])+`}`))
	}
	for i, s := range sc.Solutions {
		for off := 0; off < len(s); off += 7 {
			if sc.Truncate && i == 0 && off >= len(s)/2 {
				return events
			}
			events = append(events, delta(i, `{"content":`+quote(s[off:min(off+7, len(s))])+`}`))
		}
		events = append(events, fmt.Sprintf(chunkHead+`"choices":[{"index":%d,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`, i))
	}
	events = append(events, chunkHead+`"choices":[],"usage":`+usageJSON(sc.Usage)+`}`, "[DONE]")
	return events
}
