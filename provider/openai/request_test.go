package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/request")

// testSchema has an optional property, which the OpenAI dialect makes
// required and nullable, and properties out of alphabetical order.
const testSchema = `{"type":"object","properties":{"output":{"type":"object","properties":{"zeta":{"type":"string","minLength":1},"alpha":{"type":"integer"}},"required":["zeta"]},"calls":{"type":"array","items":{"type":"object","properties":{"_tool":{"const":"lookup"},"q":{"type":"string"}},"required":["_tool","q"]}}},"required":["output"]}`

func conversation() []provider.Message {
	return []provider.Message{
		{Role: provider.RoleSystem, Text: "You are terse."},
		{Role: provider.RoleUser, Text: "Capital of France?"},
		{Role: provider.RoleAssistant, Text: `{"output":null}`},
		{Role: provider.RoleUser, Text: "Answer it."},
	}
}

func ptr[T any](v T) *T { return &v }

// TestRequestBody checks the body the server receives against
// testdata/request/<name>.json, where the strict schema is replaced by a
// placeholder after checking that it is exactly, byte for byte,
// schema.Adapt(req.Schema, schema.OpenAI).
func TestRequestBody(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		req  provider.Request
	}{
		{
			name: "plain",
			cfg:  Config{Model: "gpt-5-mini"},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema)},
		},
		{
			name: "stream_n3",
			cfg:  Config{Model: "gpt-5-mini"},
			req: provider.Request{Model: "gpt-4o", Messages: conversation(), Schema: []byte(testSchema),
				SchemaName: "answer", N: 3, Stream: true, Temperature: ptr(0.2), MaxTokens: 1000},
		},
		{
			name: "thinking_high",
			cfg:  Config{Model: "o4-mini"},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema), Thinking: 20000, MaxTokens: 30000},
		},
		{
			name: "thinking_off",
			cfg:  Config{Model: "gpt-5.1", ThinkingOff: "none"},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema), Thinking: -1},
		},
		{
			name: "json_mode",
			cfg:  Config{Model: "llama3.1", JSONMode: true, LegacyMaxTokens: true},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema), MaxTokens: 500, Thinking: 4096},
		},
		{
			name: "json_mode_no_system",
			cfg:  Config{Model: "llama3.1", JSONMode: true},
			req:  provider.Request{Messages: conversation()[1:], Schema: []byte(testSchema), Stream: true},
		},
		{
			name: "single_choice",
			cfg:  Config{Model: "qwen3", SingleChoice: true, LegacyMaxTokens: true},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema), N: 3, Stream: true, MaxTokens: 1000},
		},
		{
			name: "cache_key",
			cfg:  Config{Model: "gpt-5-mini"},
			req:  provider.Request{Messages: conversation(), Schema: []byte(testSchema), CacheKey: "run-01JD8X4Q6N"},
		},
		{
			name: "free_text",
			cfg:  Config{Model: "gpt-4o"},
			req:  provider.Request{Messages: conversation()[1:2]},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := "completion.http"
			if tt.req.Stream {
				res = "stream.http"
			}
			srv := newCapture(t, readRecorded(t, res))
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey = srv.url(), "sk-test"
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			before := cloneRequest(&tt.req)
			if _, err := gather(t, p.Generate(context.Background(), &tt.req)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&tt.req, before); diff != "" {
				t.Errorf("Generate modified the request (-got +want)\n%s", diff)
			}
			_, body := srv.last(t)
			if tt.req.Schema != nil && !cfg.JSONMode {
				checkAdaptedSchema(t, body, tt.req.Schema)
			}
			golden(t, filepath.Join("testdata", "request", tt.name+".json"), normalise(t, body))
		})
	}
}

func cloneRequest(r *provider.Request) *provider.Request {
	c := *r
	c.Messages = slices.Clone(r.Messages)
	c.Schema = bytes.Clone(r.Schema)
	return &c
}

// checkAdaptedSchema checks the raw bytes, so the property order counts.
func checkAdaptedSchema(t *testing.T, body []byte, s json.RawMessage) {
	t.Helper()
	var got struct {
		ResponseFormat struct {
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want, err := schema.Adapt(s, schema.OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.ResponseFormat.JSONSchema.Schema, compact.Bytes()) {
		t.Errorf("schema sent:\n%s\nwant schema.Adapt(req.Schema, schema.OpenAI):\n%s", got.ResponseFormat.JSONSchema.Schema, compact.Bytes())
	}
}

// normalise replaces the strict schema with a placeholder (the schema
// package owns its exact form) and indents the body with sorted keys.
func normalise(t *testing.T, body []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if rf, ok := v["response_format"].(map[string]any); ok {
		if js, ok := rf["json_schema"].(map[string]any); ok {
			js["schema"] = "schema.Adapt(req.Schema, schema.OpenAI)"
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(got), string(want)); diff != "" {
		t.Errorf("%s (-got +want)\n%s", path, diff)
	}
}

func TestEffort(t *testing.T) {
	for _, tt := range []struct {
		budget int
		off    string
		want   string
	}{
		{0, "minimal", ""},
		{-1, "minimal", "minimal"},
		{-5000, "none", "none"},
		{1, "minimal", "low"},
		{1024, "minimal", "low"},
		{2048, "minimal", "low"},
		{2049, "minimal", "medium"},
		{8192, "minimal", "medium"},
		{8193, "minimal", "high"},
		{100000, "minimal", "high"},
	} {
		if got := effort(tt.budget, tt.off); string(got) != tt.want {
			t.Errorf("effort(%d, %q) = %q, want %q", tt.budget, tt.off, got, tt.want)
		}
	}
}

// clearEnv empties the variables New and the SDK read.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_CUSTOM_HEADERS"} {
		t.Setenv(k, "")
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name     string
		env      map[string]string
		cfg      func(url string) Config
		wantAuth string
	}{
		{
			name:     "key and base URL from the environment",
			env:      map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "<url>"},
			cfg:      func(string) Config { return Config{Model: "m"} },
			wantAuth: "Bearer sk-env",
		},
		{
			name:     "Config wins over the environment",
			env:      map[string]string{"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"},
			cfg:      func(url string) Config { return Config{Model: "m", APIKey: "sk-cfg", BaseURL: url} },
			wantAuth: "Bearer sk-cfg",
		},
		{
			name:     "Ollama: a base URL and no key",
			cfg:      func(url string) Config { return Config{Model: "qwen3:8b", BaseURL: url, Name: "ollama"} },
			wantAuth: "",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			srv := newCapture(t, readRecorded(t, "stream_ollama.http"))
			for k, v := range tt.env {
				t.Setenv(k, strings.ReplaceAll(v, "<url>", srv.url()))
			}
			p, err := New(tt.cfg(srv.url()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := gather(t, p.Generate(context.Background(), replayRequest(true)))
			if err != nil {
				t.Fatal(err)
			}
			r, _ := srv.last(t)
			if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != tt.wantAuth {
				t.Errorf("got %s with Authorization %q, want /v1/chat/completions with %q", r.URL.Path, r.Header.Get("Authorization"), tt.wantAuth)
			}
			if got.Texts[0] == "" {
				t.Errorf("no answer: %+v", got)
			}
		})
	}
}

// roundTripper answers every request from a recording without a network.
type roundTripper struct {
	rec  recorded
	reqs []*http.Request
}

func (rt *roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.reqs = append(rt.reqs, r)
	w := httptest.NewRecorder()
	rt.rec.write(w)
	return w.Result(), nil
}

func TestDefaultBaseURLAndHTTPClient(t *testing.T) {
	clearEnv(t)
	rt := &roundTripper{rec: readRecorded(t, "completion.http")}
	p, err := New(Config{APIKey: "sk-test", Model: "gpt-5-mini", HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gather(t, p.Generate(context.Background(), replayRequest(false))); err != nil {
		t.Fatal(err)
	}
	if len(rt.reqs) != 1 || rt.reqs[0].URL.String() != "https://api.openai.com/v1/chat/completions" {
		t.Errorf("requests %v", rt.reqs)
	}
}

func TestNewErrors(t *testing.T) {
	clearEnv(t)
	if _, err := New(Config{}); !errors.Is(err, provider.ErrNoKey) {
		t.Errorf("no key: got %v, want provider.ErrNoKey", err)
	}
	for _, u := range []string{"localhost:11434/v1", "ftp://host/v1", "http://", "://x"} {
		if _, err := New(Config{BaseURL: u}); err == nil {
			t.Errorf("base URL %q: no error", u)
		}
	}
}

// TestGenerateErrors: requests that cannot be sent fail before reaching
// the server.
func TestGenerateErrors(t *testing.T) {
	srv := newCapture(t, readRecorded(t, "completion.http"))
	p, err := New(Config{BaseURL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []provider.Message{{Role: provider.RoleUser, Text: "hi"}}
	for _, tt := range []struct {
		name string
		req  *provider.Request
		want error
	}{
		{"no model", &provider.Request{Messages: msgs}, ErrNoModel},
		{"unknown role", &provider.Request{Model: "m", Messages: []provider.Message{{Role: "tool", Text: "x"}}}, ErrUnknownRole},
		{"schema OpenAI cannot take", &provider.Request{Model: "m", Messages: msgs, Schema: []byte(`{"type":"string"}`)}, schema.ErrUnsupported},
		{"invalid schema JSON", &provider.Request{Model: "m", Messages: msgs, Schema: []byte(`{"type":`)}, schema.ErrInvalidJSON},
		{"nil request", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gather(t, p.Generate(context.Background(), tt.req))
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if len(srv.requests) != 0 {
		t.Errorf("%d requests reached the server", len(srv.requests))
	}
}

// TestCancelMidStream: the text that arrived is kept and the stream ends
// with the context's error.
func TestCancelMidStream(t *testing.T) {
	rec := readRecorded(t, "stream.http")
	events := strings.SplitAfter(string(rec.body), "\n\n")
	srv := newCapture(t)
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, events[0]+events[1])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	p, err := New(Config{BaseURL: srv.url(), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var text string
	for c, err := range p.Generate(ctx, replayRequest(true)) {
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
			break
		}
		text += c.Text
		cancel()
	}
	if text != `{"output":` {
		t.Errorf("text %q", text)
	}
}
