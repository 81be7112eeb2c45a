package anthropic

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/providertest"
)

const (
	testKey   = "sk-ant-test"
	testModel = "claude-test-1"
	// indexHeader tells the fake server which solution a request is for; the
	// test transport copies it from the request's context.
	indexHeader = "X-Fake-Solution"
)

// wireRequest is what the fake server reads of a request body.
type wireRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	OutputConfig *struct {
		Format struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// indexTransport copies the solution index from a request's context into a
// header, so that the fake server can answer each of N concurrent requests
// with its own solution.
type indexTransport struct{ base http.RoundTripper }

func (t indexTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(indexHeader, strconv.Itoa(solutionIndex(r.Context())))
	return t.base.RoundTrip(r)
}

// newTestServer starts h and returns a Provider configured for it.
func newTestServer(t *testing.T, h http.Handler, cfg Config) (*Provider, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.Transport = indexTransport{client.Transport}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	cfg.BaseURL = srv.URL
	cfg.HTTPClient = client
	if cfg.Model == "" {
		cfg.Model = testModel
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, srv
}

// fakeServer answers a providertest.Scenario in the Messages API's wire
// format, plain or streamed as the request asks, and records the requests.
type fakeServer struct {
	t  *testing.T
	sc providertest.Scenario
	// tool, when set, answers with a tool_use block of that name.
	tool string
	// preface, when set, is a text block before the answer's block.
	preface string
	// check, when set, checks each request body.
	check func(t *testing.T, req *wireRequest)
	// hold, when set, is called before answering solution i; it may block.
	hold func(r *http.Request, i int) bool

	mu     sync.Mutex
	bodies []wireRequest
}

func (f *fakeServer) requests() []wireRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wireRequest(nil), f.bodies...)
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := f.t
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		t.Errorf("request %s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key %q, want %q", got, testKey)
	}
	if got := r.Header.Get("Anthropic-Version"); got != "2023-06-01" {
		t.Errorf("anthropic-version %q, want 2023-06-01", got)
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read body: %v", err)
		return
	}
	var req wireRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Errorf("body is not JSON: %v\n%s", err, raw)
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, req)
	f.mu.Unlock()
	if f.check != nil {
		f.check(t, &req)
	}

	i, _ := strconv.Atoi(r.Header.Get(indexHeader))
	if f.hold != nil && !f.hold(r, i) {
		return
	}
	sc := f.sc
	if sc.Status != 0 && sc.Status != http.StatusOK {
		writeError(w, sc.Status, sc.RetryAfter.Seconds())
		return
	}
	if i >= len(sc.Solutions) {
		t.Errorf("request for solution %d of %d", i, len(sc.Solutions))
		writeError(w, http.StatusBadRequest, 0)
		return
	}
	ans := answer{
		id:       messageID(i),
		model:    req.Model,
		text:     sc.Solutions[i],
		thinking: sc.Thinking,
		usage:    sc.Usage,
		tool:     f.tool,
		preface:  f.preface,
		truncate: sc.Truncate,
	}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		for _, ev := range ans.events() {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, ans.message())
}

// checkConformance checks the parts of a request of the conformance suite.
func checkConformance(t *testing.T, req *wireRequest, sc providertest.Scenario, tool string) {
	if req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		t.Errorf("model %q, max_tokens %d, %d messages: want all set", req.Model, req.MaxTokens, len(req.Messages))
	}
	if len(req.System) != 1 || req.System[0].Text != "You are terse." {
		t.Errorf("system %+v, want the system message", req.System)
	}
	for _, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			t.Errorf("message role %q", m.Role)
		}
	}
	switch {
	case tool != "":
		if len(req.Tools) != 1 || req.Tools[0].Name != tool || len(req.Tools[0].InputSchema) == 0 || req.ToolChoice == nil {
			t.Errorf("tools %+v, tool_choice %+v: want the one tool %q", req.Tools, req.ToolChoice, tool)
		}
	case req.OutputConfig == nil || req.OutputConfig.Format.Type != "json_schema" || len(req.OutputConfig.Format.Schema) == 0:
		t.Errorf("output_config %+v, want a json_schema format", req.OutputConfig)
	}
	if sc.Thinking != "" {
		if th := req.Thinking; th == nil || th.Type != "enabled" || th.BudgetTokens < 1024 || req.MaxTokens <= th.BudgetTokens {
			t.Errorf("thinking %+v with max_tokens %d, want enabled with a budget below max_tokens", th, req.MaxTokens)
		}
	}
}

// writeError writes the API's error response for status.
func writeError(w http.ResponseWriter, status int, retryAfter float64) {
	typ, msg := "api_error", "Internal server error"
	switch status {
	case http.StatusBadRequest:
		typ, msg = "invalid_request_error", "max_tokens: Field required"
	case http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatFloat(retryAfter, 'f', -1, 64))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_011CTestError")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s},"request_id":"req_011CTestError"}`, js(typ), js(msg))
}

// answer is one response of the fake server.
type answer struct {
	id                    string // the message's; empty: testMessageID
	model, text, thinking string
	usage                 provider.Usage
	tool, preface         string
	truncate              bool
}

const (
	testMessageID = "msg_01XFDUDYJgAACzvnptvVoYEL"
	testToolID    = "toolu_01T1x1fJ34qAmk2tNTrN7Up6"
	testSignature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
)

// messageID is the id of the fake server's message for solution i.
func messageID(i int) string {
	return testMessageID + strconv.Itoa(i)
}

// apiUsage encodes u in the API's fields: output_tokens includes thinking.
func (a answer) apiUsage() string {
	return fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"output_tokens_details":{"thinking_tokens":%d},"service_tier":"standard"}`,
		a.usage.Input, a.usage.CacheWrite, a.usage.CacheRead, a.usage.Output+a.usage.Thinking, a.usage.Thinking)
}

func (a answer) stopReason() string {
	if a.tool != "" {
		return "tool_use"
	}
	return "end_turn"
}

// message is the plain JSON response.
func (a answer) message() string {
	var blocks []string
	if a.thinking != "" {
		blocks = append(blocks, fmt.Sprintf(`{"type":"thinking","thinking":%s,"signature":%s}`, js(a.thinking), js(testSignature)))
	}
	if a.preface != "" {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":%s}`, js(a.preface)))
	}
	if a.tool != "" {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":%s}`, js(testToolID), js(a.tool), a.text))
	} else {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":%s}`, js(a.text)))
	}
	return fmt.Sprintf(`{"id":%s,"type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":%s,"stop_sequence":null,"usage":%s}`,
		js(cmp.Or(a.id, testMessageID)), js(a.model), strings.Join(blocks, ","), js(a.stopReason()), a.apiUsage())
}

// events is the SSE stream, one string per event.
func (a answer) events() []string {
	var evs []string
	add := func(typ, data string, args ...any) {
		evs = append(evs, "event: "+typ+"\ndata: "+fmt.Sprintf(data, args...)+"\n\n")
	}
	start := a
	start.usage.Output, start.usage.Thinking = 1, 0
	add("message_start", `{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`,
		js(cmp.Or(a.id, testMessageID)), js(a.model), start.apiUsage())
	index := 0
	if a.thinking != "" {
		add("content_block_start", `{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, index)
		for _, p := range strict.Pieces(a.thinking, 6) {
			add("content_block_delta", `{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, index, js(p))
		}
		add("content_block_delta", `{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%s}}`, index, js(testSignature))
		add("content_block_stop", `{"type":"content_block_stop","index":%d}`, index)
		index++
	}
	if a.preface != "" {
		add("content_block_start", `{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, index)
		add("content_block_delta", `{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, index, js(a.preface))
		add("content_block_stop", `{"type":"content_block_stop","index":%d}`, index)
		index++
	}
	if a.tool != "" {
		add("content_block_start", `{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}`, index, js(testToolID), js(a.tool))
	} else {
		add("content_block_start", `{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, index)
	}
	add("ping", `{"type": "ping"}`)
	ps := strict.Pieces(a.text, 9)
	if a.truncate {
		ps = ps[:(len(ps)+1)/2]
	}
	for _, p := range ps {
		if a.tool != "" {
			add("content_block_delta", `{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, index, js(p))
		} else {
			add("content_block_delta", `{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, index, js(p))
		}
	}
	if a.truncate {
		return evs
	}
	add("content_block_stop", `{"type":"content_block_stop","index":%d}`, index)
	add("message_delta", `{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d,"output_tokens_details":{"thinking_tokens":%d}}}`,
		js(a.stopReason()), a.usage.Output+a.usage.Thinking, a.usage.Thinking)
	add("message_stop", `{"type":"message_stop"}`)
	return evs
}

// js encodes s as a JSON string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
