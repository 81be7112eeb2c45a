package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"sync/atomic"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
)

var requestCommand = &command{
	name:     "request",
	synopsis: []string{"request IDEA.json [--input JSON|@FILE] [flags]"},
	summary:  "send one Request from a saved Idea and print its solutions",
	doc: `
Sends one Request from a saved Idea ({"schema", "context"}) to the model
of --model and prints the solutions and the token usage, and the cost with
a price list (--prices or ACTS_PRICES). The acts command knows the
providers openai, anthropic, gemini (or google) and ollama, and takes any
other name with --base-url as an OpenAI-compatible server (vLLM, LM
Studio); keys come from OPENAI_API_KEY, ANTHROPIC_API_KEY and
GEMINI_API_KEY (or GOOGLE_API_KEY), Ollama's address from OLLAMA_HOST.
--stream prints each call on standard error as soon as it is complete, and
the model's visible thinking as it comes. The context is the one acts run
would start with: the Idea's presets expanded, and the inputs of --input
(as acts run takes them) added, rendered as the Idea's rendering says.
The MCP servers the Idea lists run while the command does, and their
tools are offered as acts run offers them; a Request runs no calls.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		model := fs.String("model", os.Getenv("ACTS_MODEL"), "`provider:model`, e.g. openai:gpt-5-mini, anthropic:claude-sonnet-4-5, gemini:gemini-2.5-flash, ollama:llama3.2; ACTS_MODEL sets the default")
		baseURL := fs.String("base-url", "", "the provider's API base `URL` (OpenAI-compatible servers, proxies)")
		n := fs.Int("n", 1, "ask for `N` solutions")
		thinking := fs.Int("thinking", 0, "a reasoning budget of `N` tokens (0: the provider's default; negative: off)")
		stream := fs.Bool("stream", false, "stream, printing each call as soon as it is complete")
		priceFile := pricesFlag(fs)
		asJSON := fs.Bool("json", false, `print one JSON object for scripts: {"solutions", "usage", "cost"}`)
		input := fs.String("input", "", "the inputs, as acts run takes them: `JSON` or @FILE, @- for standard input")
		return func(ctx context.Context, env *Env, pos []string) error {
			idea, err := readIdea("request", pos)
			if err != nil {
				return err
			}
			if *n < 1 {
				return fmt.Errorf("%w: --n must be 1 or more, got %d", errUsage, *n)
			}
			if idea.Context, err = startContext(env, pos[0], idea, *input); err != nil {
				return err
			}
			pl, err := loadPrices(*priceFile)
			if err != nil {
				return err
			}
			p, name, err := env.provider(ctx, *model, *baseURL)
			if err != nil {
				return err
			}
			// The Idea's MCP servers: the model is offered their tools. A
			// Request runs no calls, but their activities make them
			// explicit tools, whose results the model does not write.
			tools, closeMCP, err := connectMCP(ctx, env, pos[0], idea.MCP)
			if err != nil {
				return err
			}
			defer closeMCP()
			if idea.Context, err = offerMCP(env.Registry, tools, idea.Context); err != nil {
				return fmt.Errorf("%s: %w", pos[0], err)
			}
			cfg := agent.Config{Provider: p, Registry: env.Registry, Model: name, N: *n, Thinking: *thinking, Stream: *stream, Rendering: idea.Rendering}
			return request(ctx, env, cfg, pos[0], idea, *model, pl, *asJSON)
		}
	},
}

// request runs one Request from the Idea in file: acts request IDEA.json.
func request(ctx context.Context, env *Env, cfg agent.Config, file string, idea *agent.Idea, model string, pl *prices, asJSON bool) error {
	if cfg.Stream {
		cfg.CallbackPath = "calls"
	}
	// An error before the model is asked is the Idea's: a message no
	// handler takes, a schema that does not compile.
	var asked atomic.Bool
	p := cfg.Provider
	cfg.Provider = provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		asked.Store(true)
		return p.Generate(ctx, req)
	})
	var resp *agent.Response
	for ev, err := range agent.Stream(ctx, cfg, idea.Schema, idea.Context) {
		if err != nil {
			if !asked.Load() {
				return fmt.Errorf("%s: %w", file, err)
			}
			return err
		}
		switch {
		case ev.Element != nil && !asJSON:
			fmt.Fprintf(env.Stderr, "call %d.%d: %s\n", ev.Element.Index, ev.Element.Element.Index, escapeJSON(string(ev.Element.Value)))
		case ev.Thinking != nil && !asJSON:
			fmt.Fprint(env.Stderr, escapeText(ev.Thinking.Text))
		case ev.Repair != nil:
			fmt.Fprintf(env.Stderr, "repairing solution %d: %s\n", ev.Repair.Index, escapeLine(ev.Repair.Err.Error()))
		case ev.Lost != nil:
			// Those after it move down in the solutions printed.
			fmt.Fprintf(env.Stderr, "solution %d left out: %s\n", ev.Lost.Index, escapeLine(ev.Lost.Err.Error()))
		case ev.Response != nil:
			resp = ev.Response
		}
	}
	return printResponse(env.Stdout, resp, model, pl, asJSON)
}

func printResponse(w io.Writer, resp *agent.Response, model string, pl *prices, asJSON bool) error {
	if asJSON {
		sols := make([]json.RawMessage, len(resp.Solutions))
		for i, s := range resp.Solutions {
			sols[i] = s.Raw
		}
		out := struct {
			Solutions []json.RawMessage `json:"solutions"`
			Usage     provider.Usage    `json:"usage"`
			Cost      *float64          `json:"cost,omitempty"`
		}{Solutions: sols, Usage: resp.Usage}
		if c, ok := pl.cost(model, resp.Usage); ok {
			out.Cost = &c
		}
		b, err := marshal(out, "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for i, s := range resp.Solutions {
		fmt.Fprintf(w, "solution %d:\n%s\n", i, indentJSON(s.Raw))
	}
	u := resp.Usage
	fmt.Fprintf(w, "usage: input %d, output %d, thinking %d, cache read %d, cache write %d", u.Input, u.Output, u.Thinking, u.CacheRead, u.CacheWrite)
	if c := pl.costText(model, u); c != "" {
		fmt.Fprintf(w, "; %s", escapeLine(c))
	}
	_, err := fmt.Fprintln(w)
	return err
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
