package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
)

var resolveCommand = &command{
	name:     "resolve",
	synopsis: []string{"resolve [--instance ID] CONTEXT.json EXPR"},
	summary:  "print the value of a reference expression against a context",
	doc: `
Prints the value, as indented JSON, of a reference expression (†kind.path,
with || and &&) against the messages of CONTEXT.json ("-" reads standard
input), or the error with exit status 1. --instance resolves as a call
targeting that instance would: the instance's data first, global data
where the instance has none.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		instance := fs.String("instance", "", "resolve as a call targeting instance `ID` would")
		return func(ctx context.Context, env *Env, pos []string) error {
			return resolveCmd(ctx, env.Stdin, env.Stdout, pos, *instance)
		}
	},
}

// resolveCmd prints the value of a reference expression: acts resolve
// CONTEXT.json EXPR.
func resolveCmd(_ context.Context, stdin io.Reader, stdout io.Writer, pos []string, instance string) error {
	if len(pos) != 2 {
		return fmt.Errorf("%w: resolve takes CONTEXT.json and EXPR", errUsage)
	}
	file, expr := pos[0], pos[1]
	data, err := readFile(stdin, file)
	if err != nil {
		return err
	}
	msgs, err := message.ParseContext(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	log, err := message.NewLog(msgs...)
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
	_, err = fmt.Fprintln(stdout, indentJSON(v))
	return err
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
