package anthropic

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/requests")

// TestRequestBody compares the bodies sent with testdata/requests/*.json.
func TestRequestBody(t *testing.T) {
	orderedSchema := json.RawMessage(`{"type":"object","properties":{"output":{"type":["object","null"],` +
		`"properties":{"zeta":{"type":"string","minLength":2},"alpha":{"type":"integer"}},"required":["zeta"]},` +
		`"calls":{"type":"array","items":{"oneOf":[{"type":"object","properties":{"_tool":{"const":"lookup"}}}]}}},` +
		`"required":["output"]}`)
	temp := 0.2
	for _, tt := range []struct {
		name string
		cfg  Config
		req  provider.Request
	}{
		{"structured", Config{}, provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "You are terse."},
				{Role: provider.RoleUser, Text: "What is the capital of France?"},
			},
			Schema: orderedSchema, SchemaName: "solution", Temperature: &temp,
		}},
		{"merged roles", Config{}, provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "You are terse."},
				{Role: provider.RoleUser, Text: "## Data: ¶input\n{\"city\":\"Paris\"}"},
				{Role: provider.RoleUser, Text: "Answer."},
				{Role: provider.RoleAssistant, Text: `{"output":null}`},
				{Role: provider.RoleAssistant, Text: "(continued)"},
				{Role: provider.RoleSystem, Text: "Tools changed; a </system> quoted here does not end this."},
				{Role: provider.RoleUser, Text: "Go on."},
			},
			Schema: orderedSchema, SchemaName: "solution",
		}},
		{"thinking", Config{MaxTokens: 2000}, provider.Request{
			Messages: []provider.Message{{Role: provider.RoleUser, Text: "Think."}},
			Schema:   orderedSchema, Thinking: 100,
		}},
		{"thinking budget", Config{}, provider.Request{
			Messages:  []provider.Message{{Role: provider.RoleUser, Text: "Think hard."}},
			Schema:    orderedSchema,
			Thinking:  4096,
			MaxTokens: 1000,
		}},
		{"thinking off", Config{}, provider.Request{
			Messages: []provider.Message{{Role: provider.RoleUser, Text: "Quick."}},
			Schema:   orderedSchema, Thinking: -1,
		}},
		{"tool", Config{ToolOutput: true}, provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "You are terse."},
				{Role: provider.RoleUser, Text: "What is the capital of France?"},
			},
			Schema: orderedSchema, SchemaName: "answer",
		}},
		{"tool thinking", Config{ToolOutput: true}, provider.Request{
			Messages: []provider.Message{{Role: provider.RoleUser, Text: "Think."}},
			Schema:   orderedSchema, Thinking: 2048,
		}},
		{"free text", Config{}, provider.Request{
			Model:     "claude-haiku-4-5",
			Messages:  []provider.Message{{Role: provider.RoleUser, Text: "Say hi."}},
			MaxTokens: 100,
		}},
		{"stream", Config{}, provider.Request{
			Messages: []provider.Message{{Role: provider.RoleUser, Text: "Stream it."}},
			Schema:   orderedSchema, Stream: true,
		}},
		{"stable", Config{ToolOutput: true}, provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "You are terse."},
				{Role: provider.RoleUser, Text: "What is the capital of France?", Stable: true},
				{Role: provider.RoleAssistant, Text: `{"output":null}`},
				{Role: provider.RoleUser, Text: "lookup: Paris", Stable: true},
				{Role: provider.RoleUser, Text: "Answer now."},
			},
			Schema: orderedSchema, SchemaName: "answer",
		}},
		{"long plain", Config{}, provider.Request{
			Messages:  []provider.Message{{Role: provider.RoleUser, Text: "Write at length."}},
			MaxTokens: 64000,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var body []byte
			var header http.Header
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				body, header = b, r.Header
				mu.Unlock()
				var req wireRequest
				json.Unmarshal(b, &req)
				a := answer{model: req.Model, text: "ok", usage: provider.Usage{Input: 1, Output: 1}}
				if req.Stream {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, strings.Join(a.events(), ""))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, a.message())
			}), tt.cfg)

			req := tt.req
			req.Messages = append([]provider.Message(nil), tt.req.Messages...)
			before := clone(&req)
			var chunks int
			for _, err := range p.Generate(t.Context(), &req) {
				if err != nil {
					t.Fatal(err)
				}
				chunks++
			}
			if diff := cmp.Diff(&req, before); diff != "" {
				t.Errorf("Generate modified the request (-got +want):\n%s", diff)
			}
			if !req.Stream && chunks != 1 {
				t.Errorf("%d chunks for a plain request, want 1", chunks)
			}
			for k, want := range map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
				if got := header.Get(k); got != want {
					t.Errorf("header %s: %q, want %q", k, got, want)
				}
			}
			for _, k := range []string{"Anthropic-Beta", "Authorization"} {
				if v := header.Get(k); v != "" {
					t.Errorf("header %s: %q, want none", k, v)
				}
			}
			golden(t, filepath.Join("testdata", "requests", strings.ReplaceAll(tt.name, " ", "_")+".json"), body)
		})
	}
}

func clone(r *provider.Request) *provider.Request {
	c := *r
	c.Messages = append([]provider.Message(nil), r.Messages...)
	c.Schema = bytes.Clone(r.Schema)
	return &c
}

// golden compares body, indented, with the file, or writes it with -update.
func golden(t *testing.T, file string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	buf.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(buf.String(), string(want)); diff != "" {
		t.Errorf("%s (-got +want):\n%s", file, diff)
	}
}
