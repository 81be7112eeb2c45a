package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
)

// requestCmd runs one Request from a saved Idea.
func requestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("request", flag.ContinueOnError)
	model := fs.String("model", os.Getenv("ACTS_MODEL"), "provider:model, e.g. openai:gpt-5-mini, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:llama3.2")
	baseURL := fs.String("base-url", "", "API base URL (OpenAI-compatible servers, proxies)")
	n := fs.Int("n", 1, "number of solutions")
	thinking := fs.Int("thinking", 0, "reasoning budget in tokens (negative: off)")
	stream := fs.Bool("stream", false, "stream, printing each call as soon as it is complete")
	asJSON := fs.Bool("json", false, "print one JSON object for scripts")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	idea, err := readIdea("request", pos)
	if err != nil {
		return err
	}
	p, name, err := NewProvider(*model, *baseURL)
	if err != nil {
		return err
	}
	cfg := agent.Config{Provider: provider.Retry(p, provider.RetryConfig{}), Model: name, N: *n, Thinking: *thinking, Stream: *stream}
	if *stream {
		cfg.CallbackPath = "calls"
	}
	var resp *agent.Response
	for ev, err := range agent.Stream(ctx, cfg, idea.Schema, idea.Context) {
		if err != nil {
			return err
		}
		switch {
		case ev.Element != nil && !*asJSON:
			fmt.Fprintf(stderr, "call %d.%d: %s\n", ev.Element.Index, ev.Element.Element.Index, ev.Element.Value)
		case ev.Thinking != nil && !*asJSON:
			fmt.Fprint(stderr, ev.Thinking.Text)
		case ev.Repair != nil:
			fmt.Fprintf(stderr, "repairing solution %d: %v\n", ev.Repair.Index, ev.Repair.Err)
		case ev.Response != nil:
			resp = ev.Response
		}
	}
	return printResponse(stdout, resp, *asJSON)
}

func printResponse(w io.Writer, resp *agent.Response, asJSON bool) error {
	if asJSON {
		sols := make([]json.RawMessage, len(resp.Solutions))
		for i, s := range resp.Solutions {
			sols[i] = s.Raw
		}
		out, err := json.MarshalIndent(struct {
			Solutions []json.RawMessage `json:"solutions"`
			Usage     provider.Usage    `json:"usage"`
		}{sols, resp.Usage}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	}
	for i, s := range resp.Solutions {
		fmt.Fprintf(w, "solution %d:\n%s\n", i, indentJSON(s.Raw))
	}
	u := resp.Usage
	_, err := fmt.Fprintf(w, "usage: input %d, output %d, thinking %d, cache read %d, cache write %d\n", u.Input, u.Output, u.Thinking, u.CacheRead, u.CacheWrite)
	return err
}

// NewProvider builds the provider named by spec ("provider:model":
// openai, anthropic, gemini, ollama) and returns it with the model name. A
// name it does not know, given a base URL, is an OpenAI-compatible server.
// Keys come from the providers' usual environment variables.
func NewProvider(spec, baseURL string) (provider.Provider, string, error) {
	name, model, ok := strings.Cut(spec, ":")
	if !ok || name == "" || model == "" {
		return nil, "", fmt.Errorf("%w: --model must be provider:model (or set ACTS_MODEL), got %q", errUsage, spec)
	}
	switch name {
	case "openai":
		p, err := openai.New(openai.Config{Model: model, BaseURL: baseURL})
		return p, model, err
	case "anthropic":
		p, err := anthropic.New(anthropic.Config{Model: model, BaseURL: baseURL})
		return p, model, err
	case "gemini", "google":
		p, err := gemini.New(gemini.Config{Model: model, BaseURL: baseURL})
		return p, model, err
	case "ollama":
		if baseURL == "" {
			baseURL = ollamaURL()
		}
		p, err := openai.New(openai.Config{Name: "ollama", Model: model, BaseURL: baseURL})
		return p, model, err
	}
	if baseURL == "" {
		return nil, "", fmt.Errorf("%w: unknown provider %q (openai, anthropic, gemini, ollama, or any name with --base-url for an OpenAI-compatible server)", errUsage, name)
	}
	p, err := openai.New(openai.Config{Name: name, Model: model, BaseURL: baseURL})
	return p, model, err
}

// ollamaURL is Ollama's OpenAI-compatible endpoint, from OLLAMA_HOST.
func ollamaURL() string {
	host := os.Getenv("OLLAMA_HOST")
	if host == "" {
		return "http://localhost:11434/v1"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return strings.TrimRight(host, "/") + "/v1"
}

// readIdea reads the one Idea file a command takes.
func readIdea(cmd string, pos []string) (*agent.Idea, error) {
	if len(pos) != 1 {
		return nil, fmt.Errorf("%w: %s takes IDEA.json", errUsage, cmd)
	}
	data, err := os.ReadFile(pos[0])
	if err != nil {
		return nil, err
	}
	idea, err := agent.ParseIdea(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pos[0], err)
	}
	return idea, nil
}
