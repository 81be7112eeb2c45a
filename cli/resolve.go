package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
)

var resolveCommand = &command{
	name:     "resolve",
	synopsis: []string{"resolve [--instance ID] [--input JSON|@FILE] CONTEXT.json EXPR"},
	summary:  "print the value of a reference expression against a context",
	doc: `
Prints the value, as indented JSON, of a reference expression (†kind.path,
with || and &&) against the messages of CONTEXT.json ("-" reads standard
input), or the error with exit status 1. CONTEXT.json holds an array of
messages, or an Idea's context; either is read with its presets expanded;
--input adds inputs as acts run does. --instance resolves as a call
targeting that instance would: the instance's data first, global data
where the instance has none.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		instance := fs.String("instance", "", "resolve as a call targeting instance `ID` would")
		input := fs.String("input", "", "the inputs, as acts run takes them: `JSON` or @FILE, @- for standard input")
		return func(ctx context.Context, env *Env, pos []string) error {
			return resolveCmd(ctx, env, pos, *instance, *input)
		}
	},
}

// resolveCmd prints the value of a reference expression: acts resolve
// CONTEXT.json EXPR.
func resolveCmd(_ context.Context, env *Env, pos []string, instance, input string) error {
	if len(pos) != 2 {
		return fmt.Errorf("%w: resolve takes CONTEXT.json and EXPR", errUsage)
	}
	file, expr := pos[0], pos[1]
	data, inputs, err := readWithInput(env, "CONTEXT.json", file, input)
	if err != nil {
		return err
	}
	msgs, err := readContext(env.Registry, data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	log, err := message.NewLog(append(msgs, inputs...)...)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var src ref.Source = log
	if instance != "" {
		src = log.Instance(instance)
	}
	v, err := ref.EvalString(src, expr)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, indentJSON(v))
	return err
}

// readContext reads the messages of a context file: a JSON array of
// messages, or an Idea; their presets are expanded as acts run expands
// them, an Idea's own first.
func readContext(reg *agent.Registry, data []byte) ([]message.Message, error) {
	if d := bytes.TrimSpace(data); len(d) == 0 || d[0] != '{' {
		msgs, err := message.ParseContext(data)
		if err != nil {
			return nil, err
		}
		return agent.ExpandPresets(reg, nil, msgs)
	}
	idea, err := agent.ParseIdea(data)
	if err != nil {
		return nil, err
	}
	return agent.ExpandPresets(reg, idea.Presets, idea.Context)
}

// indentJSON is v indented for people, escaped (see escapeJSON): still
// valid JSON, with the same value.
func indentJSON(v json.RawMessage) string {
	var out bytes.Buffer
	if err := json.Indent(&out, v, "", "  "); err != nil {
		return escapeText(string(v))
	}
	return escapeJSON(out.String())
}
