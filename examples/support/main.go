// Command support answers a customer with a model and three kinds of
// tool: classify is latent (the model produces its result), draft_reply is
// a delegate (an isolated sub-run that sees only what the call passes),
// and refund is Go code that runs only after a person approves it at the
// terminal (human in the loop).
//
// It needs a real provider: ACTS_MODEL (provider:model) with that
// provider's key, or just OPENAI_API_KEY, ANTHROPIC_API_KEY or
// GEMINI_API_KEY set.
//
//	go run ./examples/support "I was charged twice for order 1042, please refund the 25 EUR"
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/augceo/agent"
	"github.com/augceo/agent/cli/providers"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv, ""))
}

// Tools: classify has no activity, so it is latent, and its _output says
// what the model must produce; draft_reply delegates to an anonymous
// sub-run; refund has code.
const tools = `{
  "classify": {
    "description": "Classifies a customer message.",
    "type": "object",
    "properties": {
      "message": {"type": "string"},
      "_output": {"type": "object", "properties": {
        "category": {"enum": ["billing", "delivery", "product", "other"]},
        "urgency": {"enum": ["low", "normal", "high"]}}, "required": ["category", "urgency"]}},
    "required": ["message"]
  },
  "draft_reply": {
    "description": "You write short, warm replies to customers of an online shop. Never promise what the facts do not support.",
    "type": "object",
    "properties": {
      "message": {"type": "string"}, "category": {"type": "string"}, "facts": {"type": "string"},
      "_output": {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}},
    "required": ["message", "category"],
    "_delegate": "anonymous"
  },
  "refund": {
    "description": "Refunds an amount of an order to the customer's card. A person approves each refund.",
    "type": "object",
    "properties": {"order": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}, "currency": {"type": "string"}},
    "required": ["order", "amount", "currency"]
  }
}`

const answer = `{"type": "object", "properties": {
  "reply": {"type": "string", "description": "the message to send to the customer"},
  "refunded": {"type": "boolean"}}, "required": ["reply", "refunded"]}`

const instructions = "You are a support agent of an online shop. Classify the customer's message, " +
	"refund what is clearly owed (each refund is approved by a person), have draft_reply write the answer, " +
	"and give that reply as your output."

// refund issues a refund. A real shop would call its payment provider.
func refund(_ context.Context, p struct {
	Order    string  `json:"order"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}) (map[string]string, error) {
	return map[string]string{"refund": "re_" + p.Order, "status": "issued", "amount": fmt.Sprintf("%.2f %s", p.Amount, p.Currency)}, nil
}

// run is the program; baseURL, when set, points the provider at another
// server (the tests use one).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, baseURL string) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, `usage: support "the customer's message"`)
		return 2
	}
	spec := getenv("ACTS_MODEL")
	for _, k := range []struct{ env, model string }{
		{"OPENAI_API_KEY", "openai:gpt-5-mini"}, {"ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"}, {"GEMINI_API_KEY", "gemini:gemini-2.5-flash"},
	} {
		if spec == "" && getenv(k.env) != "" {
			spec = k.model
		}
	}
	if spec == "" {
		fmt.Fprintln(stderr, "support needs a model: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY, or ACTS_MODEL=provider:model")
		return 2
	}
	name, model, ok := strings.Cut(spec, ":")
	if !ok || name == "" || model == "" {
		fmt.Fprintf(stderr, "support: ACTS_MODEL=%q is not provider:model (openai:gpt-5-mini, say)\n", spec)
		return 2
	}
	p, err := providers.New(ctx, name, model, baseURL)
	if err != nil {
		fmt.Fprintln(stderr, "support:", err)
		return 1
	}

	reg := agent.NewRegistry()
	var defs map[string]json.RawMessage
	if err := json.Unmarshal([]byte(tools), &defs); err != nil {
		panic(err) // the constant above is valid JSON
	}
	for name, def := range defs {
		reg.Tool(name, def)
	}
	reg.Activity("refund", agent.Bind(refund))

	in := bufio.NewReader(stdin)
	cfg := agent.Config{
		Provider: provider.Retry(p, provider.RetryConfig{}),
		Model:    model,
		Registry: reg,
		MaxSteps: 6,
		// Human in the loop: every refund waits for a yes; anything else
		// is a refusal, and what was typed is the reason the model sees.
		Confirm: func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
			if c.Tool != "refund" {
				return agent.Decision{}, nil
			}
			fmt.Fprintf(stdout, "approve refund %s? [y/N, or a reason to refuse] ", c.Args())
			line, err := in.ReadString('\n')
			if err != nil && line == "" {
				return agent.Decision{Reject: "nobody approved it"}, nil
			}
			switch line = strings.TrimSpace(line); strings.ToLower(line) {
			case "y", "yes":
				return agent.Decision{}, nil
			case "", "n", "no":
				return agent.Decision{Reject: "the refund was not approved"}, nil
			default:
				return agent.Decision{Reject: line}, nil
			}
		},
	}
	msgs := []message.Message{
		message.Text(instructions),
		{Type: message.TypeTool, Tool: json.RawMessage(`"classify"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"draft_reply"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"refund"`)},
		message.Data("input", mustJSON(map[string]string{"message": args[0]})),
	}
	msgs[0].Role = message.RoleSystem
	for ev, err := range agent.Events(ctx, cfg, json.RawMessage(answer), msgs) {
		if err != nil {
			fmt.Fprintln(stderr, "support:", err)
			return 1
		}
		switch ev.Kind {
		case agent.EventCallStarted:
			fmt.Fprintf(stderr, "→ %s %s\n", ev.Call.Tool, ev.Call.Args())
		case agent.EventCallFailed:
			fmt.Fprintf(stderr, "✗ %s: %v\n", ev.Call.Tool, ev.Err)
		case agent.EventMessage:
			if m := ev.Message; m.Type == message.TypeData && m.Kind == "state" {
				fmt.Fprintf(stderr, "  %s = %s\n", m.OutputPath, m.Data)
			}
		case agent.EventDone:
			var out struct {
				Reply    string `json:"reply"`
				Refunded bool   `json:"refunded"`
			}
			if err := json.Unmarshal(ev.Result.Solution.Output, &out); err != nil {
				fmt.Fprintln(stderr, "support: output:", err)
				return 1
			}
			fmt.Fprintf(stdout, "%s\n(refunded: %v; %d steps, %d tokens)\n", out.Reply, out.Refunded, ev.Result.Steps, ev.Result.Usage.Total())
		}
	}
	return 0
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
