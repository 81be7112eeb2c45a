package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/openai"
)

// llamaServer is a fake llama-server (llama.cpp's OpenAI-compatible
// server; Ollama and LM Studio hand schemas to the same converter). Its
// JSON-Schema-to-grammar converter rejects a pattern that is not anchored
// at both ends, "^…$", and the whole request with it; it answers 500 to a
// request for more than one choice; otherwise it answers as
// openaitest.Server does.
func llamaServer(t *testing.T, answer func(body []byte) string) *httptest.Server {
	ok := openaitest.Server(t, answer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ResponseFormat struct {
				JSONSchema struct {
					Schema any `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
			N *int `json:"n"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body: %v", err)
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if req.N != nil && *req.N != 1 {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"code":500,"message":"Only one completion choice is allowed","type":"server_error"}}`)
			return
		}
		if p, bad := unanchoredPattern(req.ResponseFormat.JSONSchema.Schema); bad {
			t.Logf("pattern %q is not anchored at both ends", p)
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"JSON schema conversion failed:\nPattern must start with '^' and end with '$'","type":"invalid_request_error"}}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ok.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// unanchoredPattern returns the first pattern in s that llama.cpp refuses.
func unanchoredPattern(s any) (string, bool) {
	switch v := s.(type) {
	case map[string]any:
		if p, ok := v["pattern"].(string); ok && (!strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$")) {
			return p, true
		}
		for _, e := range v {
			if p, bad := unanchoredPattern(e); bad {
				return p, true
			}
		}
	case []any:
		for _, e := range v {
			if p, bad := unanchoredPattern(e); bad {
				return p, true
			}
		}
	}
	return "", false
}

// TestLlamaCppAcceptsComposedSchema: the patterns the composed schema adds
// for references and output paths are ones llama.cpp's grammar converter
// takes, so a context with tools runs against llama-server, Ollama and LM
// Studio, and a reference the model writes is still taken as one.
func TestLlamaCppAcceptsComposedSchema(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
	reg.Activity("put", agent.Bind(func(ctx context.Context, p struct {
		V int `json:"v"`
	}) (int, error) {
		return p.V, nil
	}))
	answers := []string{
		`{"calls":[{"_reasoningForCall":null,"_tool":"put","v":"†input.n","_outputPath":"†state.n","_outputMethod":null}],"output":null}`,
		`{"calls":[],"output":{"n":2}}`,
	}
	srv := llamaServer(t, func([]byte) string {
		a := answers[0]
		if len(answers) > 1 {
			answers = answers[1:]
		}
		return a
	})
	p, err := openai.New(openai.Config{Name: "llama.cpp", BaseURL: srv.URL + "/v1", Model: "qwen3"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"data","kind":"input","data":{"n":2}}]`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := res.Log.Value(message.Identity{Kind: message.KindState}); err != nil || string(got) != `{"n":2}` {
		t.Errorf("state %s, %v, want {\"n\":2}", got, err)
	}
}

// TestLlamaCppSingleChoice: llama-server refuses n above 1, so with
// SingleChoice the adapter leaves n out and the Request asks once for each
// solution.
func TestLlamaCppSingleChoice(t *testing.T) {
	asked := 0
	srv := llamaServer(t, func([]byte) string {
		asked++
		return `{"output":` + strconv.Itoa(asked) + `}`
	})
	p, err := openai.New(openai.Config{Name: "llama.cpp", BaseURL: srv.URL + "/v1", Model: "qwen3", SingleChoice: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Request(context.Background(), agent.Config{Provider: p, N: 3}, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"role":"user","content":"Pick a number."}]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res.Solutions {
		got = append(got, string(s.Output))
	}
	if want := []string{"1", "2", "3"}; !slices.Equal(got, want) || asked != 3 {
		t.Errorf("solutions %v after %d requests, want %v after 3", got, asked, want)
	}
}
