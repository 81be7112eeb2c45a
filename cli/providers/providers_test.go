package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/cli"
	"github.com/augceo/agent/cli/providers"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/provider"
)

func TestNew(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("GEMINI_API_KEY", "k")
	t.Setenv("OLLAMA_HOST", "")
	for _, tt := range []struct {
		name, baseURL string
		want          provider.Endpoint
	}{
		{"openai", "", provider.Endpoint{Provider: "openai", BaseURL: "https://api.openai.com/v1/", Model: "m"}},
		{"openai", "http://proxy/v1", provider.Endpoint{Provider: "openai", BaseURL: "http://proxy/v1", Model: "m"}},
		{"anthropic", "http://proxy", provider.Endpoint{Provider: "anthropic", BaseURL: "http://proxy", Model: "m"}},
		{"gemini", "http://proxy", provider.Endpoint{Provider: "gemini", BaseURL: "http://proxy", Model: "m"}},
		{"google", "http://proxy", provider.Endpoint{Provider: "gemini", BaseURL: "http://proxy", Model: "m"}},
		{"ollama", "", provider.Endpoint{Provider: "ollama", BaseURL: "http://localhost:11434/v1", Model: "m"}},
		{"vllm", "http://gpu:8000/v1", provider.Endpoint{Provider: "vllm", BaseURL: "http://gpu:8000/v1", Model: "m"}},
	} {
		p, err := providers.New(context.Background(), tt.name, "m", tt.baseURL)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		d, ok := p.(provider.Describer)
		if !ok {
			t.Errorf("%s: %T does not say its endpoint", tt.name, p)
			continue
		}
		if got := d.Endpoint(); got != tt.want {
			t.Errorf("%s at %q: endpoint %+v, want %+v", tt.name, tt.baseURL, got, tt.want)
		}
	}
	t.Setenv("OLLAMA_HOST", "box:1234/")
	if p, err := providers.New(context.Background(), "ollama", "m", ""); err != nil || p.(provider.Describer).Endpoint().BaseURL != "http://box:1234/v1" {
		t.Errorf("OLLAMA_HOST: %v", err)
	}
	_, err := providers.New(context.Background(), "acme", "m", "")
	if !errors.Is(err, cli.ErrUnknownProvider) || !strings.Contains(err.Error(), `unknown provider "acme" (openai, anthropic, gemini, ollama, or any name with --base-url`) {
		t.Errorf("unknown provider: %v", err)
	}
	// A missing key is named as a user of acts sets it, not as a Go
	// program's Config field.
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	for _, tt := range []struct{ name, want string }{
		{"anthropic", "provider: no API key: anthropic:m needs ANTHROPIC_API_KEY"},
		{"openai", "provider: no API key: openai:m needs OPENAI_API_KEY (a server that needs none: --base-url URL or OPENAI_BASE_URL)"},
		{"gemini", "provider: no API key: gemini:m needs GEMINI_API_KEY or GOOGLE_API_KEY"},
	} {
		if _, err := providers.New(context.Background(), tt.name, "m", ""); !errors.Is(err, provider.ErrNoKey) || err.Error() != tt.want {
			t.Errorf("%s, no key: %v, want %s", tt.name, err, tt.want)
		}
	}
}

// TestActs runs the acts command's wiring, cli.Main with providers.New,
// against a fake OpenAI-compatible server.
func TestActs(t *testing.T) {
	srv := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	idea := filepath.Join(t.TempDir(), "idea.json")
	if err := os.WriteFile(idea, []byte(`{"schema":{"type":"object"},"context":[{"type":"input","country":"France"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	acts := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cli.Main(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr, Providers: providers.New})
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := acts("request", idea, "--model", "vllm:m", "--base-url", srv.URL+"/v1")
	if code != 0 || !strings.Contains(out, `"capital": "Paris"`) {
		t.Errorf("request: exit %d, %q, %q", code, out, errOut)
	}
	code, _, errOut = acts("request", idea, "--model", "acme:m")
	if code != 2 || !strings.HasPrefix(errOut, `acts: usage: --model acme:m: unknown provider "acme" (openai, anthropic`) {
		t.Errorf("unknown provider: exit %d, %q", code, errOut)
	}
	// A run resumed with no flags is rebuilt from its saved endpoint.
	db := filepath.Join(t.TempDir(), "runs.db")
	if code, _, errOut := acts("run", idea, "--model", "vllm:m", "--base-url", srv.URL+"/v1", "--store", db, "--id", "r"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	fork := []string{"fork", "r", "--at", "0", "--id", "f", "--store", db}
	if code, _, errOut := acts(fork...); code != 0 {
		t.Fatalf("fork: %s", errOut)
	}
	code, _, errOut = acts("resume", "f", "--store", db)
	if code != 0 || !strings.Contains(errOut, "resuming run f: vllm at "+srv.URL+"/v1, model m") {
		t.Errorf("resume: exit %d, %q", code, errOut)
	}
}

// TestOllamaMaxTokens: Ollama's OpenAI-compatible API reads the output
// limit from max_tokens only and ignores max_completion_tokens, so the
// ollama provider sends the older name.
func TestOllamaMaxTokens(t *testing.T) {
	var body []byte
	srv := openaitest.Server(t, func(b []byte) string {
		body = b
		return `{"output":null}`
	})
	p, err := providers.New(context.Background(), "ollama", "qwen3", srv.URL+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}, MaxTokens: 64}
	if _, err := provider.Collect(p.Generate(context.Background(), req)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"max_tokens":64`)) || bytes.Contains(body, []byte(`max_completion_tokens`)) {
		t.Errorf("the limit does not go out as max_tokens:\n%s", body)
	}
}

// TestGeminiSeveralSolutions: acts request --n 3 against a Gemini 3
// model, which answers candidateCount above 1 with the API's 400, gives
// three solutions: the refused request is sent again for one candidate,
// and each later solution is asked alone.
func TestGeminiSeveralSolutions(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "k")
	var mu sync.Mutex
	var counts []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			GenerationConfig struct {
				CandidateCount int `json:"candidateCount"`
			} `json:"generationConfig"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		counts = append(counts, body.GenerationConfig.CandidateCount)
		n := len(counts)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if body.GenerationConfig.CandidateCount > 1 {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"message":"Multiple candidates is not enabled for this model","status":"INVALID_ARGUMENT"}}`)
			return
		}
		fmt.Fprintf(w, `{"candidates":[{"content":{"parts":[{"text":"{\"output\":{\"n\":%d}}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}}`, n)
	}))
	defer srv.Close()
	idea := filepath.Join(t.TempDir(), "idea.json")
	if err := os.WriteFile(idea, []byte(`{"schema":{"type":"object"},"context":[{"type":"input","pick":"a number"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"request", idea, "--model", "gemini:gemini-3-pro-preview", "--base-url", srv.URL, "--n", "3", "--json"}
	if code := cli.Main(context.Background(), args, cli.Env{Stdout: &stdout, Stderr: &stderr, Providers: providers.New}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var out struct {
		Solutions []json.RawMessage `json:"solutions"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(out.Solutions) != 3 {
		t.Errorf("%d solutions, want 3: %s", len(out.Solutions), stdout.String())
	}
	// The first asks for 3 and is refused; then one candidate each.
	if want := []int{3, 0, 0, 0}; !slices.Equal(counts, want) {
		t.Errorf("candidateCount of each request %v, want %v", counts, want)
	}
}
