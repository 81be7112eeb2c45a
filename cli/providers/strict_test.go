package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent/cli"
	"github.com/augceo/agent/cli/providers"
	"github.com/augceo/agent/internal/strict"
)

// strictAnswer answers a request with a valid solution of the schema the
// provider got: the first request that offers tools calls each of them,
// every other one gives an output.
func strictAnswer() strict.Answer {
	called := false
	return func(req *strict.Request, _ int) (string, error) {
		tools, err := strict.Tools(req.Schema)
		if err != nil {
			return "", err
		}
		if len(tools) > 0 && !called {
			called = true
			var calls []strict.Call
			for _, tool := range tools {
				calls = append(calls, strict.Call{Tool: tool})
			}
			s, err := strict.Solution(req.Schema, nil, calls...)
			return string(s), err
		}
		out, err := strict.Property(req.Schema, "output")
		if err != nil {
			return "", err
		}
		ex, err := strict.Example(out)
		if err != nil {
			return "", err
		}
		if string(ex) == "null" {
			ex = json.RawMessage(`{}`)
		}
		s, err := strict.Solution(req.Schema, ex)
		return string(s), err
	}
}

// TestActsStrict runs the acts commands a new user starts with against
// fakes of OpenAI, Anthropic and Gemini that enforce each one's strict
// structured-output rules: every schema the commands compose (a loop's
// with tools and an input, a plan's latent calls, several solutions, a
// stream, a conversation's next turn) is one the provider accepts.
func TestActsStrict(t *testing.T) {
	dir := t.TempDir()
	idea := filepath.Join(dir, "capital.json")
	if err := os.WriteFile(idea, []byte(`{
		"schema": {"type": "object", "properties": {"capital": {"type": "string"}, "population": {"type": "integer", "minimum": 0}}, "required": ["capital"]},
		"context": [
			{"type": "text", "role": "system", "text": "You answer questions about countries."},
			{"type": "tool", "tool": {"lookup": {"description": "Looks a country up", "type": "object",
				"properties": {"country": {"type": "string", "maxLength": 40}, "_output": {"type": "object", "properties": {"facts": {"type": "string"}}}},
				"required": ["country"]}}},
			{"type": "input", "schema": {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"], "additionalProperties": false}}
		]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	orders, err := os.ReadFile("../../examples/orders/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ordersInput := filepath.Join(dir, "orders.jsonl")
	if err := os.WriteFile(ordersInput, []byte(strings.Join(strings.SplitAfterN(string(orders), "\n", 4)[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("GEMINI_API_KEY", "k")
	for name, start := range map[string]func(testing.TB, strict.Answer) *strict.Server{
		"openai":    strict.NewOpenAI,
		"anthropic": strict.NewAnthropic,
		"gemini":    strict.NewGemini,
	} {
		t.Run(name, func(t *testing.T) {
			srv := start(t, strictAnswer())
			db := filepath.Join(t.TempDir(), "runs.db")
			model := []string{"--model", name + ":m", "--base-url", srv.URL}
			for _, tt := range []struct {
				args []string
				code int
			}{
				{[]string{"run", idea, "--input", `{"country":"France"}`, "--store", db, "--id", "loop"}, 0},
				{[]string{"continue", "loop", "--message", "And Italy?", "--store", db}, 0},
				{[]string{"run", idea, "--input", `[{"country":"France"},{"country":"Italy"}]`, "--store", db, "--id", "instanced"}, 0},
				{[]string{"request", idea, "--input", `{"country":"France"}`, "--n", "2", "--stream"}, 0},
				// The plan's latent calls write what the fake makes up,
				// which later calls cannot read: they fail, exit 3.
				{[]string{"run", "../../examples/orders/orders.json", "--input", "@" + ordersInput, "--store", db, "--id", "orders"}, 3},
			} {
				var stdout, stderr bytes.Buffer
				code := cli.Main(context.Background(), append(tt.args, model...), cli.Env{Stdout: &stdout, Stderr: &stderr, Providers: providers.New})
				if code != tt.code {
					t.Errorf("acts %s: exit %d, want %d: %s%s", strings.Join(tt.args, " "), code, tt.code, stdout.String(), stderr.String())
				}
			}
			for _, err := range srv.Rejected() {
				t.Errorf("rejected: %v", err)
			}
			if len(srv.Requests()) < 8 {
				t.Errorf("%d requests", len(srv.Requests()))
			}
		})
	}
}
