// Command acts runs and inspects Acts agents from a terminal.
//
// Usage:
//
//	acts resolve [--instance ID] CONTEXT.json EXPR
//	acts request [--model provider:model] [--n N] [--stream] [--json] IDEA.json
//	acts plan validate [--structure] FILE
//	acts plan graph FILE
//
// resolve prints the JSON value of a reference expression (†kind.path,
// with || and &&) against a context file, a JSON array of messages; "-"
// reads the context from standard input. With --instance it resolves as a
// call targeting that instance would: the instance's data first, global
// data where the instance has none.
//
// request runs one Request from a saved Idea ({schema, context}) and
// prints the solutions and the usage. --model (or ACTS_MODEL) picks the
// provider: openai, anthropic, gemini, ollama, or any name with --base-url
// for an OpenAI-compatible server; keys come from the usual variables
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY).
//
// plan validate checks a plan (an array of calls, {"plan", "context"} or
// an Idea whose context holds a plan message) before anything runs:
// unknown tools, cycles, references nothing can satisfy. plan graph prints
// it as a Mermaid graph.
//
// Exit status: 0 on success, 1 when the expression does not resolve or the
// context is malformed, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// errUsage marks errors that exit with status 2.
var errUsage = errors.New("usage")

const usage = `Usage:
  acts resolve [--instance ID] CONTEXT.json EXPR
  acts request [--model provider:model] [--base-url URL] [--n N] [--thinking N] [--stream] [--json] IDEA.json
  acts plan validate [--structure] FILE
  acts plan graph FILE
`

// run executes one command and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "resolve":
		err = resolveCmd(ctx, args[1:], stdin, stdout)
	case "request":
		err = requestCmd(ctx, args[1:], stdout, stderr)
	case "plan":
		err = planCmd(ctx, args[1:], stdin, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "acts: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "acts: %v\n", err)
		return 1
	}
}

// parseFlags parses flags placed anywhere among the arguments and returns
// the positional ones.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
