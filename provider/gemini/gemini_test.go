package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	testKey   = "test-key"
	testModel = "gemini-test"
)

// The REST wire format, as documented for generateContent: only the fields
// the tests read or write.
type (
	wireRequest struct {
		Contents          []wireContent   `json:"contents"`
		SystemInstruction *wireContent    `json:"systemInstruction"`
		GenerationConfig  json.RawMessage `json:"generationConfig"`
	}
	wireConfig struct {
		CandidateCount     int             `json:"candidateCount"`
		Temperature        *float64        `json:"temperature"`
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ThinkingConfig     *struct {
			ThinkingBudget  *int `json:"thinkingBudget"`
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	}
	wireContent struct {
		Role  string     `json:"role,omitempty"`
		Parts []wirePart `json:"parts"`
	}
	wirePart struct {
		Text    string `json:"text,omitempty"`
		Thought bool   `json:"thought,omitempty"`
	}
	wireCandidate struct {
		Content      wireContent `json:"content"`
		FinishReason string      `json:"finishReason,omitempty"`
		Index        int         `json:"index,omitempty"`
	}
	wireUsage struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
		TotalTokenCount         int `json:"totalTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	}
	wireResponse struct {
		Candidates    []wireCandidate `json:"candidates"`
		UsageMetadata *wireUsage      `json:"usageMetadata,omitempty"`
		ModelVersion  string          `json:"modelVersion"`
		ResponseID    string          `json:"responseId"`
	}
)

func (r *wireRequest) config(t *testing.T) wireConfig {
	t.Helper()
	var c wireConfig
	if len(r.GenerationConfig) > 0 {
		if err := json.Unmarshal(r.GenerationConfig, &c); err != nil {
			t.Errorf("generationConfig: %v", err)
		}
	}
	return c
}

// rpcStatus is the google.rpc.Code the API sends with an HTTP status.
func rpcStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

func writeError(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":"fake failure %d","status":%q}}`, status, status, rpcStatus(status))
}

func writeEvent(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	w.(http.Flusher).Flush()
}

func usageWire(u provider.Usage) *wireUsage {
	return &wireUsage{
		PromptTokenCount:        u.Input + u.CacheRead,
		CandidatesTokenCount:    u.Output,
		CachedContentTokenCount: u.CacheRead,
		ThoughtsTokenCount:      u.Thinking,
		TotalTokenCount:         u.Input + u.CacheRead + u.Output + u.Thinking,
	}
}

// fake answers sc in the Gemini wire format, generated from the scenario.
func fake(t *testing.T, sc providertest.Scenario) provider.Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stream := r.URL.Path == "/v1beta/models/"+testModel+":streamGenerateContent"
		if !stream && r.URL.Path != "/v1beta/models/"+testModel+":generateContent" {
			t.Errorf("path %s", r.URL.Path)
		}
		if stream && r.URL.Query().Get("alt") != "sse" {
			t.Errorf("stream query %q, want alt=sse", r.URL.RawQuery)
		}
		if got := r.Header.Get("x-goog-api-key"); got != testKey {
			t.Errorf("x-goog-api-key %q", got)
		}
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("body: %v", err)
		}
		cfg := req.config(t)
		if len(req.Contents) != 1 || req.Contents[0].Role != "user" || req.SystemInstruction == nil ||
			len(req.SystemInstruction.Parts) != 1 || req.SystemInstruction.Parts[0].Text != "You are terse." {
			t.Errorf("contents %+v, systemInstruction %+v", req.Contents, req.SystemInstruction)
		}
		// The suite's output is a free-form object, which responseSchema
		// cannot say: it goes as responseJsonSchema.
		if cfg.ResponseMimeType != "application/json" || (len(cfg.ResponseSchema) == 0) == (len(cfg.ResponseJSONSchema) == 0) {
			t.Errorf("generationConfig %s: want responseMimeType and one of responseSchema and responseJsonSchema", req.GenerationConfig)
		}
		if n := max(cfg.CandidateCount, 1); n != max(len(sc.Solutions), 1) {
			t.Errorf("candidateCount %d, want %d", cfg.CandidateCount, len(sc.Solutions))
		}
		if sc.Thinking != "" && (cfg.ThinkingConfig == nil || !cfg.ThinkingConfig.IncludeThoughts) {
			t.Errorf("thinkingConfig %+v, want includeThoughts", cfg.ThinkingConfig)
		}
		if sc.Status != 0 && sc.Status != http.StatusOK {
			writeError(w, sc.Status, sc.RetryAfter)
			return
		}
		resp := func(cands []wireCandidate, u *wireUsage) wireResponse {
			return wireResponse{Candidates: cands, UsageMetadata: u, ModelVersion: "gemini-test-001", ResponseID: "fake"}
		}
		if !stream {
			var cands []wireCandidate
			for i, s := range sc.Solutions {
				c := wireCandidate{Content: wireContent{Role: "model"}, FinishReason: "STOP", Index: i}
				if i == 0 && sc.Thinking != "" {
					c.Content.Parts = append(c.Content.Parts, wirePart{Text: sc.Thinking, Thought: true})
				}
				c.Content.Parts = append(c.Content.Parts, wirePart{Text: s})
				cands = append(cands, c)
			}
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			json.NewEncoder(w).Encode(resp(cands, usageWire(sc.Usage)))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		prompt := usageWire(provider.Usage{Input: sc.Usage.Input, CacheRead: sc.Usage.CacheRead})
		if sc.Thinking != "" {
			writeEvent(w, resp([]wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: sc.Thinking, Thought: true}}}}}, prompt))
		}
		// The candidates go one after the other, each in pieces, the last
		// piece with its finishReason and the last event with the full
		// usage. (Interleaved candidates are replayed from
		// testdata/stream_two_candidates.sse: provider.Collect cannot take
		// them yet, see collect.)
		const piece = 10
		for i, s := range sc.Solutions {
			for at := 0; at < len(s); at += piece {
				end := min(at+piece, len(s))
				if sc.Truncate && end > len(s)/2 {
					return // cut: no finishReason, no more events
				}
				c := wireCandidate{Content: wireContent{Role: "model", Parts: []wirePart{{Text: s[at:end]}}}, Index: i}
				u := prompt
				if end == len(s) {
					c.FinishReason = "STOP"
					if i == len(sc.Solutions)-1 {
						u = usageWire(sc.Usage)
					}
				}
				writeEvent(w, resp([]wireCandidate{c}, u))
			}
		}
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, fake, providertest.Capabilities{Thinking: true})
}

// capture is a server that records each request and answers with a short
// whole (or streamed) answer.
type capture struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.requests = append(c.requests, r.Clone(context.Background()))
		c.bodies = append(c.bodies, b)
		c.mu.Unlock()
		answer := wireResponse{Candidates: []wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: `{"output":1}`}}}, FinishReason: "STOP"}}, UsageMetadata: &wireUsage{PromptTokenCount: 3, CandidatesTokenCount: 2, TotalTokenCount: 5}}
		if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			writeEvent(w, answer)
			return
		}
		json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.requests)
}

func (c *capture) provider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	cfg.BaseURL = c.srv.URL
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *capture) last(t *testing.T) (*http.Request, wireRequest, wireConfig) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) == 0 {
		t.Fatal("no request reached the server")
	}
	var req wireRequest
	if err := json.Unmarshal(c.bodies[len(c.bodies)-1], &req); err != nil {
		t.Fatal(err)
	}
	return c.requests[len(c.requests)-1], req, req.config(t)
}

func fullRequest() *provider.Request {
	temp := 0.25
	return &provider.Request{
		Model: "gemini-2.5-flash",
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "You are a travel agent."},
			{Role: provider.RoleSystem, Text: "## Data: city\n{\"name\":\"Paris\"}"},
			{Role: provider.RoleUser, Text: "Plan a day in Paris."},
			{Role: provider.RoleAssistant, Text: `{"output":null,"calls":[{"_tool":"weather","city":"Paris"}]}`},
			{Role: provider.RoleUser, Text: "weather: sunny, 24°C"},
			{Role: provider.RoleUser, Text: "Answer now."},
		},
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"output":{"type":["object","null"],"properties":{"plan":{"type":"array","items":{"type":"string"},"maxItems":5}},"required":["plan"]},` +
			`"calls":{"type":"array","items":{"type":"object","properties":{"_tool":{"const":"weather"},"city":{"type":"string","minLength":1}},"required":["_tool","city"],"additionalProperties":false}}},` +
			`"required":["output"]}`),
		SchemaName:  "solution",
		N:           2,
		Stream:      true,
		Temperature: &temp,
		MaxTokens:   1000,
		Thinking:    2048,
	}
}

func clone(r *provider.Request) *provider.Request {
	c := *r
	c.Messages = append([]provider.Message(nil), r.Messages...)
	c.Schema = bytes.Clone(r.Schema)
	if r.Temperature != nil {
		t := *r.Temperature
		c.Temperature = &t
	}
	return &c
}

// TestRequestGolden checks the whole body sent for a request that uses
// every field, against testdata/request.golden.json.
func TestRequestGolden(t *testing.T) {
	c := newCapture(t)
	p := c.provider(t, Config{Model: "unused-default"})
	req := fullRequest()
	before := clone(req)
	if _, err := provider.Collect(p.Generate(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, req); diff != "" {
		t.Errorf("Generate modified the request (-before +after):\n%s", diff)
	}
	r, _, _ := c.last(t)
	if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.URL.RawQuery != "alt=sse" {
		t.Errorf("got %s %s?%s", r.Method, r.URL.Path, r.URL.RawQuery)
	}
	if got := r.Header.Get("x-goog-api-key"); got != testKey {
		t.Errorf("x-goog-api-key %q, want %q", got, testKey)
	}
	var got bytes.Buffer
	c.mu.Lock()
	body := c.bodies[0]
	c.mu.Unlock()
	if err := json.Indent(&got, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')
	golden := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got.String(), string(want)); diff != "" {
		t.Errorf("request body (-got +want):\n%s", diff)
	}
}

func TestRequestMapping(t *testing.T) {
	const adapted = `{"type":"OBJECT","properties":{"output":{"type":"STRING","nullable":true}},"required":["output"],"propertyOrdering":["output"]}`
	simple := `{"type":"object","properties":{"output":{"type":["string","null"]}},"required":["output"]}`
	const adaptedJSON = `{"type":"object","properties":{"output":{"type":["string","null"]}},"required":["output"]}`
	recursive := `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`
	const recursiveJSON = `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`
	for _, tt := range []struct {
		name  string
		cfg   Config
		req   provider.Request
		check func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig)
	}{
		{
			name: "model from the config, roles and system instruction",
			cfg:  Config{Model: "gemini-default"},
			req: provider.Request{Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "s"}, {Role: provider.RoleUser, Text: "a"}, {Role: provider.RoleSystem, Text: "late </system> x"},
				{Role: provider.RoleAssistant, Text: "b"}, {Role: provider.RoleAssistant, Text: "c"}, {Role: provider.RoleUser, Text: ""},
			}},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if r.URL.Path != "/v1beta/models/gemini-default:generateContent" {
					t.Errorf("path %s", r.URL.Path)
				}
				// A system message after the conversation began stays in
				// place, a closing tag in its text escaped.
				want := []wireContent{
					{Role: "user", Parts: []wirePart{{Text: "a"}, {Text: "<system>\nlate &lt;/system> x\n</system>"}}},
					{Role: "model", Parts: []wirePart{{Text: "b"}, {Text: "c"}}},
				}
				if diff := cmp.Diff(body.Contents, want); diff != "" {
					t.Errorf("contents (-got +want):\n%s", diff)
				}
				if body.SystemInstruction == nil || len(body.SystemInstruction.Parts) != 1 || body.SystemInstruction.Parts[0].Text != "s" {
					t.Errorf("systemInstruction %+v", body.SystemInstruction)
				}
			},
		},
		{
			name: "request model wins; no schema is free text",
			cfg:  Config{Model: "gemini-default"},
			req:  provider.Request{Model: "models/gemini-pro", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if r.URL.Path != "/v1beta/models/gemini-pro:generateContent" {
					t.Errorf("path %s", r.URL.Path)
				}
				if body.SystemInstruction != nil || cfg.ResponseMimeType != "" || cfg.ResponseSchema != nil || cfg.ResponseJSONSchema != nil {
					t.Errorf("got systemInstruction %+v, generationConfig %s", body.SystemInstruction, body.GenerationConfig)
				}
				if cfg.CandidateCount != 0 || cfg.ThinkingConfig != nil || cfg.Temperature != nil || cfg.MaxOutputTokens != 0 {
					t.Errorf("zero fields were sent: %s", body.GenerationConfig)
				}
			},
		},
		{
			name: "ResponseSchema sends the schema adapted to responseSchema",
			cfg:  Config{ResponseSchema: true},
			req:  provider.Request{Model: "m", Schema: json.RawMessage(simple), N: 1},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if string(cfg.ResponseSchema) != adapted || cfg.ResponseJSONSchema != nil || cfg.ResponseMimeType != "application/json" {
					t.Errorf("generationConfig %s, want responseSchema %s", body.GenerationConfig, adapted)
				}
				if cfg.CandidateCount != 1 {
					t.Errorf("candidateCount %d, want 1", cfg.CandidateCount)
				}
			},
		},
		{
			name: "by default the schema is adapted to responseJsonSchema",
			req:  provider.Request{Model: "m", Schema: json.RawMessage(" " + simple + "\n")},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if string(cfg.ResponseJSONSchema) != adaptedJSON || cfg.ResponseSchema != nil {
					t.Errorf("generationConfig %s, want responseJsonSchema %s", body.GenerationConfig, adaptedJSON)
				}
			},
		},
		{
			name: "the schema keeps to the keywords responseJsonSchema documents",
			req: provider.Request{Model: "m", Schema: json.RawMessage(`{"type":"object","properties":{
				"_tool":{"const":"put"},"path":{"type":"string","pattern":"^†"},"o":{"type":"object","nullable":true,"properties":{"k":{"type":"string"}}},
				"scopes":{"const":["input"]},"s":{"$ref":"#/$defs/s","description":"an s"}},"required":["_tool","s"],"$defs":{"s":{"type":"string","minLength":1}}}`)},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if err := strict.GeminiJSON(cfg.ResponseJSONSchema); err != nil {
					t.Errorf("%v\nsent: %s", err, cfg.ResponseJSONSchema)
				}
			},
		},
		{
			name: "the deprecated JSONSchema overrides ResponseSchema",
			cfg:  Config{ResponseSchema: true, JSONSchema: true},
			req:  provider.Request{Model: "m", Schema: json.RawMessage(simple)},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if string(cfg.ResponseJSONSchema) != adaptedJSON || cfg.ResponseSchema != nil {
					t.Errorf("generationConfig %s, want responseJsonSchema %s", body.GenerationConfig, adaptedJSON)
				}
			},
		},
		{
			name: "a recursive schema falls back to responseJsonSchema",
			cfg:  Config{ResponseSchema: true},
			req:  provider.Request{Model: "m", Schema: json.RawMessage(recursive)},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if string(cfg.ResponseJSONSchema) != recursiveJSON || cfg.ResponseSchema != nil {
					t.Errorf("generationConfig %s, want responseJsonSchema %s", body.GenerationConfig, recursiveJSON)
				}
			},
		},
		{
			name: "an object with no properties falls back to responseJsonSchema",
			cfg:  Config{ResponseSchema: true},
			req:  provider.Request{Model: "m", Schema: json.RawMessage(`{"type":"object","properties":{"output":{"type":"object"},"_tool":{"const":"put"}},"required":["output"]}`)},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				want := `{"type":"object","properties":{"output":{"type":"object"},"_tool":{"enum":["put"]}},"required":["output"]}`
				if cfg.ResponseSchema != nil || string(cfg.ResponseJSONSchema) != want {
					t.Errorf("generationConfig %s, want responseJsonSchema %s", body.GenerationConfig, want)
				}
				if err := strict.GeminiJSON(cfg.ResponseJSONSchema); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "negative thinking turns it off",
			req:  provider.Request{Model: "m", Thinking: -1},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				tc := cfg.ThinkingConfig
				if tc == nil || tc.ThinkingBudget == nil || *tc.ThinkingBudget != 0 || tc.IncludeThoughts {
					t.Errorf("thinkingConfig %s, want {thinkingBudget: 0}", body.GenerationConfig)
				}
			},
		},
		{
			name: "thinking budget, temperature, maxOutputTokens, candidateCount",
			req:  provider.Request{Model: "m", Thinking: 512, Temperature: new(0.7), MaxTokens: 64, N: 3},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				tc := cfg.ThinkingConfig
				if tc == nil || tc.ThinkingBudget == nil || *tc.ThinkingBudget != 512 || !tc.IncludeThoughts {
					t.Errorf("thinkingConfig %s", body.GenerationConfig)
				}
				if cfg.Temperature == nil || *cfg.Temperature != 0.7 || cfg.MaxOutputTokens != 64 || cfg.CandidateCount != 3 {
					t.Errorf("generationConfig %s", body.GenerationConfig)
				}
			},
		},
		{
			name: "SingleCandidate sends no candidateCount",
			cfg:  Config{SingleCandidate: true},
			req:  provider.Request{Model: "m", N: 3},
			check: func(t *testing.T, r *http.Request, body wireRequest, cfg wireConfig) {
				if bytes.Contains(body.GenerationConfig, []byte("candidateCount")) {
					t.Errorf("generationConfig %s, want no candidateCount", body.GenerationConfig)
				}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(t)
			p := c.provider(t, tt.cfg)
			if _, err := provider.Collect(p.Generate(context.Background(), &tt.req)); err != nil {
				t.Fatal(err)
			}
			r, body, cfg := c.last(t)
			tt.check(t, r, body, cfg)
		})
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		req  provider.Request
		want error
	}{
		{"no model", Config{}, provider.Request{}, ErrNoModel},
		{"unknown cache retention", Config{Model: "m"}, provider.Request{CacheRetention: "1d"}, provider.ErrCacheRetention},
		{"unknown role", Config{Model: "m"}, provider.Request{Messages: []provider.Message{{Role: "tool", Text: "x"}}}, nil},
		{"invalid schema", Config{Model: "m"}, provider.Request{Schema: json.RawMessage(`{"type":`)}, nil},
		{"invalid schema, ResponseSchema", Config{Model: "m", ResponseSchema: true}, provider.Request{Schema: json.RawMessage(`{"type":`)}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCapture(t)
			p := c.provider(t, tt.cfg)
			_, err := provider.Collect(p.Generate(context.Background(), &tt.req))
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("got %v, want an error (%v)", err, tt.want)
			}
			if c.count() != 0 {
				t.Errorf("%d requests sent, want none", c.count())
			}
		})
	}
}

// replay serves a file from testdata/ with the given status and headers.
func replay(t *testing.T, file string, status int, header http.Header) *Provider {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		if strings.HasSuffix(file, ".sse") {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		}
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const recordedSolution = `{"output":{"answer":"Paris","notes":["capital","Seine"]},"calls":[{"_tool":"lookup","q":"population of \"Paris\""}]}`

const recordedThinking = "**Identifying the capital**\n\nThe user wants the capital of France. That is Paris; a lookup call adds the population."

func TestReplay(t *testing.T) {
	for _, tt := range []struct {
		name   string
		file   string
		status int
		header http.Header
		stream bool
		want   *provider.Result
		model  string // the modelVersion, on the last chunk
		id     string // the responseId, on the last chunk
	}{
		{
			name: "whole answer with thoughts and cached tokens", file: "generate_content.json", status: 200,
			want: &provider.Result{Texts: []string{recordedSolution}, Thinking: []string{recordedThinking}, FinishReasons: []string{"stop"},
				Usage: provider.Usage{Input: 24, Output: 37, Thinking: 48, CacheRead: 128}},
			model: "gemini-2.5-flash", id: "k2ZvaOTxD9-Uz7IPuMqo6Qo",
		},
		{
			name: "stream with thoughts and cached tokens", file: "stream_thinking.sse", status: 200, stream: true,
			want: &provider.Result{Texts: []string{recordedSolution}, Thinking: []string{recordedThinking}, FinishReasons: []string{"stop"},
				Usage: provider.Usage{Input: 24, Output: 37, Thinking: 48, CacheRead: 128}},
			model: "gemini-2.5-flash", id: "k2ZvaOTxD9-Uz7IPuMqo6Qo",
		},
		{
			// Gemini 3: thought signatures on answer parts, one alone in an
			// empty part with the finishReason, and tokens of a tool-use
			// prompt, which count as input: Usage.Total() is
			// totalTokenCount, 1280.
			name: "stream with thought signatures and tool-use tokens", file: "stream_signature.sse", status: 200, stream: true,
			want: &provider.Result{Texts: []string{`{"output":"Paris","calls":[]}`}, Thinking: []string{"**Weighing the lookup**\n\nA search adds the population."},
				FinishReasons: []string{"stop"}, Usage: provider.Usage{Input: 216, Output: 10, Thinking: 30, CacheRead: 1024}},
			model: "gemini-3-flash-preview", id: "gB9waIuXC5-oz7IPy-6M4QE",
		},
		{
			name: "two candidates finishing apart", file: "stream_two_candidates.sse", status: 200, stream: true,
			want: &provider.Result{Texts: []string{`{"output":"Paris"}`, `{"output":"Paris, France"}`}, Thinking: []string{"", ""},
				FinishReasons: []string{"stop", "length"}, Usage: provider.Usage{Input: 40, Output: 16}},
			model: "gemini-2.5-flash", id: "k2ZvaOTxD9-Uz7IPuMqo6Qo",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := replay(t, tt.file, tt.status, tt.header)
			req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "?"}}, Stream: tt.stream, N: len(tt.want.Texts)}
			got, chunks, err := collect(p.Generate(context.Background(), req))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("result (-got +want):\n%s", diff)
			}
			checkChunks(t, chunks)
			if got := chunks[len(chunks)-1].Model; got != tt.model {
				t.Errorf("model %q, want %q", got, tt.model)
			}
			if got := chunks[len(chunks)-1].ResponseID; got != tt.id {
				t.Errorf("response id %q, want %q", got, tt.id)
			}
		})
	}
}

// collect is provider.Collect, keeping the chunks too. It does not use
// provider.Collect, which panics ("strings: illegal use of non-zero Builder
// copied by value") when a solution's text continues after a chunk of a
// higher Index first appeared, as in interleaved candidates.
func collect(seq iter.Seq2[*provider.Chunk, error]) (*provider.Result, []*provider.Chunk, error) {
	var (
		chunks          []*provider.Chunk
		texts, thinking []*strings.Builder
		r               = &provider.Result{}
		err             error
	)
	for c, e := range seq {
		if e != nil {
			err = e
			break
		}
		chunks = append(chunks, c)
		for len(texts) <= c.Index {
			texts, thinking = append(texts, &strings.Builder{}), append(thinking, &strings.Builder{})
			r.FinishReasons = append(r.FinishReasons, "")
		}
		texts[c.Index].WriteString(c.Text)
		thinking[c.Index].WriteString(c.Thinking)
		if c.Done {
			r.FinishReasons[c.Index] = c.FinishReason
		}
		if c.Usage != nil {
			r.Usage.Add(*c.Usage)
		}
	}
	for i := range texts {
		r.Texts = append(r.Texts, texts[i].String())
		r.Thinking = append(r.Thinking, thinking[i].String())
	}
	return r, chunks, err
}

// checkChunks checks the Chunk contract: nothing after a solution's Done
// chunk, and usage and model on the last chunk only.
func checkChunks(t *testing.T, chunks []*provider.Chunk) {
	t.Helper()
	done := map[int]bool{}
	for i, c := range chunks {
		if done[c.Index] {
			t.Errorf("chunk %d of solution %d after its Done chunk", i, c.Index)
		}
		done[c.Index] = done[c.Index] || c.Done
		if (c.Usage != nil) != (i == len(chunks)-1) {
			t.Errorf("chunk %d/%d has usage %v", i, len(chunks), c.Usage)
		}
		if (c.Model != "" || c.ResponseID != "") && i != len(chunks)-1 {
			t.Errorf("chunk %d/%d names the model %q or the response %q", i, len(chunks), c.Model, c.ResponseID)
		}
	}
}

func TestReplayErrors(t *testing.T) {
	date := "Sat, 21 Nov 2026 10:00:00 GMT"
	for _, tt := range []struct {
		name      string
		file      string
		status    int
		header    http.Header
		stream    bool
		want      *provider.Error
		wantText  string // received before the error
		wantIs    error
		wantNotPE bool
	}{
		{
			name: "429 with RetryInfo in the body", file: "error_429.json", status: 429,
			want: &provider.Error{Provider: "gemini", Status: 429, Code: "RESOURCE_EXHAUSTED", RetryAfter: 37 * time.Second},
		},
		{
			name: "Retry-After header wins over RetryInfo", file: "error_429.json", status: 429, stream: true,
			header: http.Header{"Retry-After": {"3"}},
			want:   &provider.Error{Provider: "gemini", Status: 429, Code: "RESOURCE_EXHAUSTED", RetryAfter: 3 * time.Second},
		},
		{
			name: "503 with an HTTP-date Retry-After", file: "error_503.json", status: 503,
			header: http.Header{"Retry-After": {"Sat, 21 Nov 2026 10:00:30 GMT"}, "Date": {date}},
			want:   &provider.Error{Provider: "gemini", Status: 503, Code: "UNAVAILABLE", RetryAfter: 30 * time.Second},
		},
		{
			name: "400 invalid argument", file: "error_400.json", status: 400,
			want: &provider.Error{Provider: "gemini", Status: 400, Code: "INVALID_ARGUMENT"},
		},
		{
			name: "error event inside a stream", file: "stream_error_event.sse", status: 200, stream: true,
			want: &provider.Error{Provider: "gemini", Status: 503, Code: "UNAVAILABLE"}, wantText: recordedSolution[:9],
		},
		{
			name: "truncated stream", file: "stream_truncated.sse", status: 200, stream: true,
			wantIs: provider.ErrTruncated, wantText: recordedSolution[:40], wantNotPE: true,
		},
		{
			name: "empty stream", file: "empty.sse", status: 200, stream: true,
			wantIs: provider.ErrTruncated, wantNotPE: true,
		},
		{
			name: "prompt blocked", file: "prompt_blocked.json", status: 200,
			wantIs: ErrNoCandidates, wantNotPE: true,
		},
		{
			name: "prompt blocked, streamed", file: "prompt_blocked.sse", status: 200, stream: true,
			wantIs: ErrNoCandidates, wantNotPE: true,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := replay(t, tt.file, tt.status, tt.header)
			req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "?"}}, Stream: tt.stream}
			got, err := provider.Collect(p.Generate(context.Background(), req))
			if err == nil {
				t.Fatalf("got %+v, want an error", got)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("got %v, want %v", err, tt.wantIs)
			}
			pe, isPE := errors.AsType[*provider.Error](err)
			if isPE == tt.wantNotPE {
				t.Errorf("got %T %v", err, err)
			}
			if tt.want != nil && isPE {
				if pe.Err == nil || pe.Err.Error() == "" {
					t.Errorf("no message in %v", pe)
				}
				pe.Err = nil
				if diff := cmp.Diff(pe, tt.want, cmpopts.IgnoreFields(provider.Error{}, "Model")); diff != "" {
					t.Errorf("error (-got +want):\n%s", diff)
				}
			}
			if text := strings.Join(got.Texts, ""); text != tt.wantText {
				t.Errorf("text before the error %q, want %q", text, tt.wantText)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	p := replay(t, "error_429.json", 429, nil)
	_, err := provider.Collect(p.Generate(context.Background(), &provider.Request{}))
	const want = "gemini gemini-test: 429 Too Many Requests (RESOURCE_EXHAUSTED): You exceeded your current quota"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q, want it to start with %q", err, want)
	}
}

// TestStreamConnectionDropped cuts the connection in the middle of an
// event: the text already received comes out, then ErrTruncated.
func TestStreamConnectionDropped(t *testing.T) {
	for _, tt := range []struct {
		name  string
		whole int // events sent whole before the cut
		want  []string
	}{
		{"after an event", 1, []string{`{"output":`}},
		{"in the first event", 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for range tt.whole {
					writeEvent(w, wireResponse{Candidates: []wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: `{"output":`}}}}}})
				}
				fmt.Fprint(w, `data: {"candidates": [{"content": {"parts": [{"text": "\"Par`)
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			got, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: true}))
			if !errors.Is(err, provider.ErrTruncated) {
				t.Errorf("got %v, want ErrTruncated", err)
			}
			if diff := cmp.Diff(got.Texts, tt.want); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
		})
	}
}

// TestCancelMidStream cancels while the server holds the stream open.
func TestCancelMidStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeEvent(w, wireResponse{Candidates: []wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: `{"output":`}}}}}})
		<-r.Context().Done()
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var text string
	for c, err := range p.Generate(ctx, &provider.Request{Stream: true}) {
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

// TestNoHiddenRequests checks that the SDK neither retries a failed request
// nor continues an answer that stopped with a continuation token: each
// Generate sends exactly one request.
func TestNoHiddenRequests(t *testing.T) {
	// The API's continuation protocol: a candidate that stops with
	// finishReason CONTINUATION and a token to resume from.
	const paused = `{"candidates":[{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"finishReason":"CONTINUATION","continuationToken":"Y29udGludWU=","index":0}]}`
	for _, tt := range []struct {
		name    string
		stream  bool
		status  int
		body    string
		wantErr bool
	}{
		{"503", false, http.StatusServiceUnavailable, "", true},
		{"503 streamed", true, http.StatusServiceUnavailable, "", true},
		{"429 streamed", true, http.StatusTooManyRequests, "", true},
		{"empty stream", true, http.StatusOK, "", true},
		{"continuation", false, http.StatusOK, paused, false},
		{"continuation streamed", true, http.StatusOK, "data: " + paused + "\r\n\r\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if tt.status != http.StatusOK {
					writeError(w, tt.status, time.Second)
					return
				}
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			r, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: tt.stream}))
			if (err != nil) != tt.wantErr {
				t.Errorf("got %v, want an error: %v", err, tt.wantErr)
			}
			if got := n.Load(); got != 1 {
				t.Errorf("%d requests, want 1", got)
			}
			if !tt.wantErr && (len(r.Texts) != 1 || r.Texts[0] != `{"output":` || r.FinishReasons[0] != "continuation") {
				t.Errorf("got %+v, want the paused text and finish reason continuation", r)
			}
		})
	}
}

type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPClient(t *testing.T) {
	c := newCapture(t)
	ct := &countingTransport{}
	hc := &http.Client{Transport: ct}
	p := c.provider(t, Config{HTTPClient: hc, Model: "m"})
	if _, err := provider.Collect(p.Generate(context.Background(), &provider.Request{})); err != nil {
		t.Fatal(err)
	}
	if ct.n.Load() != 1 {
		t.Errorf("the configured client sent %d requests, want 1", ct.n.Load())
	}
	if hc.Transport != ct {
		t.Error("New changed the caller's http.Client")
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name         string
		key          string
		gemini, goog string
		want         string
	}{
		{"config wins", "cfg", "gem", "goog", "cfg"},
		{"GEMINI_API_KEY before GOOGLE_API_KEY", "", "gem", "goog", "gem"},
		{"GOOGLE_API_KEY", "", "", "goog", "goog"},
		{"none", "", "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GEMINI_API_KEY", tt.gemini)
			t.Setenv("GOOGLE_API_KEY", tt.goog)
			t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true") // must not switch the backend
			c := newCapture(t)
			p, err := New(Config{APIKey: tt.key, BaseURL: c.srv.URL, Model: "m"})
			if tt.want == "" {
				if !errors.Is(err, provider.ErrNoKey) {
					t.Errorf("got %v, want provider.ErrNoKey", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := provider.Collect(p.Generate(context.Background(), &provider.Request{})); err != nil {
				t.Fatal(err)
			}
			r, _, _ := c.last(t)
			if got := r.Header.Get("x-goog-api-key"); got != tt.want {
				t.Errorf("x-goog-api-key %q, want %q", got, tt.want)
			}
			if r.URL.Path != "/v1beta/models/m:generateContent" {
				t.Errorf("path %s", r.URL.Path)
			}
		})
	}
}
