// Package cli is the acts command line: run, resume and inspect durable
// runs, send one Request, validate and draw plans, resolve references.
//
// cmd/acts runs it with the default registry. A program with activities
// of its own runs the same commands over its registry:
//
//	func main() {
//		reg := agent.NewRegistry()
//		reg.Tool("charge", chargeSchema)
//		reg.Activity("charge", agent.Bind(charge))
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//		defer stop()
//		os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Registry: reg}))
//	}
//
// Usage:
//
//	acts run IDEA.json [--input JSON|@FILE] [--model provider:model] [--store URL] [--id ID] [--json]
//	acts resume RUN [--store URL] [--model provider:model] [--json]
//	acts runs [--store URL] [--json]
//	acts log RUN [--store URL] [--json]
//	acts fork RUN --at N [--id NEW] [--store URL]
//	acts request [--model provider:model] [--n N] [--stream] [--json] IDEA.json
//	acts plan validate [--structure] FILE
//	acts plan graph FILE
//	acts resolve [--instance ID] CONTEXT.json EXPR
//
// run runs an Idea ({schema, context}) durably in a store. When the
// context ends with a plan whose calls all have code activities, the plan
// runs with no model at all, once per instance when the inputs are
// instanced; otherwise the agent loop runs with the model of --model (or
// ACTS_MODEL). --input adds input messages: a JSON object is one input; a
// JSON array, or a file of JSON lines, is one instanced input per element
// (its _instance, or its position from 1). The store is a SQLite file
// (the default: ACTS_STORE, else acts.db), "memory:", or a postgres://
// URL. A progress bar goes to standard error when it is a terminal.
// Ctrl-C stops the run cleanly: what happened is in the store, and resume
// continues it. Calls that finished are never run again; a call that
// started and did not finish runs again only if its activity is
// idempotent, and is reported otherwise.
//
// runs lists the runs of a store; log prints a run's trace (steps, calls
// with their references resolved, outputs, errors, usage and cost); fork
// copies a run up to its message N into a new run, which resume continues.
//
// request runs one Request from a saved Idea and prints the solutions and
// the usage. --model picks the provider: openai, anthropic, gemini,
// ollama, or any name with --base-url for an OpenAI-compatible server;
// keys come from the usual variables (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// GEMINI_API_KEY).
//
// plan validate checks a plan (an array of calls, {"plan", "context"} or
// an Idea whose context holds a plan message) before anything runs; plan
// graph prints it as a Mermaid graph. resolve prints the value of a
// reference expression (†kind.path, with || and &&) against a context
// file; with --instance it resolves as a call of that instance would.
//
// Exit status: 0 on success; 1 on an error; 2 on a usage error; 3 when a
// run ended but some of its calls failed; 130 when a run was interrupted.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/augceo/agent"
)

// Env is what the commands run with. The zero value uses
// agent.DefaultRegistry and the process's standard streams.
type Env struct {
	// Registry holds the tools and activities runs can use.
	Registry *agent.Registry
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
}

// Exit statuses of Main besides 0, 1 and 2.
const (
	ExitCallsFailed = 3   // the run ended, and some calls failed
	ExitInterrupted = 130 // the run was interrupted (Ctrl-C); resume continues it
)

// errUsage marks errors that exit with status 2.
var errUsage = errors.New("usage")

// exitError carries an exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

const usage = `Usage:
  acts run IDEA.json [--input JSON|@FILE] [--model provider:model] [--store URL] [--id ID] [--concurrency N] [--json]
  acts resume RUN [--store URL] [--model provider:model] [--json]
  acts runs [--store URL] [--json]
  acts log RUN [--store URL] [--json]
  acts fork RUN --at N [--id NEW] [--store URL]
  acts request [--model provider:model] [--base-url URL] [--n N] [--thinking N] [--stream] [--json] IDEA.json
  acts plan validate [--structure] FILE
  acts plan graph FILE
  acts resolve [--instance ID] CONTEXT.json EXPR
`

// Main runs one command and returns the exit status.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Registry == nil {
		env.Registry = agent.DefaultRegistry
	}
	if env.Stdin == nil {
		env.Stdin = os.Stdin
	}
	if env.Stdout == nil {
		env.Stdout = os.Stdout
	}
	if env.Stderr == nil {
		env.Stderr = os.Stderr
	}
	stdin, stdout, stderr := env.Stdin, env.Stdout, env.Stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = runCmd(ctx, &env, args[1:])
	case "resume":
		err = resumeCmd(ctx, &env, args[1:])
	case "runs":
		err = runsCmd(ctx, &env, args[1:])
	case "log":
		err = logCmd(ctx, &env, args[1:])
	case "fork":
		err = forkCmd(ctx, &env, args[1:])
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
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "acts: %v\n%s", err, usage)
		return 2
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "acts: %v\n", err)
		return ee.code
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
