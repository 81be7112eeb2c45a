// Package cli is the acts command line: run, resume and inspect durable
// runs, send one Request, validate and draw plans, resolve references,
// and serve tools and Ideas over MCP.
//
// cmd/acts runs it with the default registry and every model provider. A
// program with activities of its own runs the same commands over its
// registry:
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
// Such a program has no model providers, and builds without their SDKs:
// plans whose calls all have activities run, and a command that needs a
// model says the program has none. Setting [Env.Providers] to
// providers.New (package github.com/augceo/agent/cli/providers) gives it
// the providers of cmd/acts. [Env.Name] says how a user runs it, so that
// the commands its output suggests (resume, log) name it rather than
// acts, which lacks its activities.
//
// # Commands
//
//	acts run IDEA.json [--input JSON|@FILE] [flags]
//	acts resume RUN [flags]
//	acts continue RUN [--message TEXT|@FILE]... [--messages JSON|@FILE]... [flags]
//	acts runs [flags]
//	acts log RUN [flags]
//	acts fork RUN --at N [flags]
//	acts request IDEA.json [--input JSON|@FILE] [flags]
//	acts plan validate [--structure] [--input JSON|@FILE] FILE
//	acts plan graph FILE
//	acts resolve [--instance ID] [--input JSON|@FILE] CONTEXT.json EXPR
//	acts mcp serve [--tool NAME]... [--idea NAME=FILE]... [--model provider:model] [--base-url URL]
//
// "acts help COMMAND" and "acts COMMAND --help" print a command's
// synopsis, what it does and every flag with its default; docs/cli.md in
// the repository describes them all.
//
// run runs an Idea ({schema, context}) durably in a store. When the
// context has a plan message, its last plan runs (messages after it
// included: it need not end the context), once per instance when the
// inputs are instanced: with no model at all when its calls all have code
// activities, else its latent and delegate calls ask the model of --model
// (or ACTS_MODEL). Otherwise the agent loop runs with that model. --input
// adds input messages: a JSON object is one input; a JSON array, or a
// file of JSON lines, is one instanced input per element
// (its _instance, or its position from 1). The store is a SQLite file
// (the default: ACTS_STORE, else acts.db), "memory:", or a postgres://
// URL. A progress bar goes to standard error when it is a terminal.
// Ctrl-C stops the run cleanly: what happened is in the store, and resume
// continues it. Calls that finished are never run again; a call that
// started and did not finish runs again only if its activity is
// idempotent or it is latent, and is reported otherwise.
//
// continue takes the next turn of the conversation a finished agent
// loop run holds: the run's answer, then the messages of --message (user
// text) and --messages (protocol messages), and the loop goes on in the
// same run, with the run's model and settings as resume uses them.
//
// runs lists the runs of a store; log prints a run's trace (steps, calls
// with their references resolved, outputs, errors, usage, and the cost
// when a price list is given with --prices or ACTS_PRICES); fork copies a
// run up to its message N into a new run, which resume continues.
//
// request runs one Request from a saved Idea and prints the solutions and
// the usage. With cmd/acts, --model picks the provider: openai,
// anthropic, gemini, ollama, or any name with --base-url for an
// OpenAI-compatible server; keys come from the usual variables
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY).
//
// plan validate checks a plan (an array of calls, {"plan", "context"} or
// an Idea whose context holds a plan message) before anything runs, with
// the inputs of --input as run takes them, once per instance when they
// are instanced; plan
// graph prints it as a Mermaid graph. resolve prints the value of a
// reference expression (†kind.path, with || and &&) against a context
// file or an Idea, with the inputs of --input; with --instance it
// resolves as a call of that instance would.
//
// Text that runs, users and models wrote is printed with its control
// characters escaped (\x1b, \u009b, \n in a one-line field), so that a
// trace cannot drive the terminal; --json output is plain JSON.
//
// # MCP
//
// run, request, resume and continue connect the MCP servers an Idea lists ("mcp",
// see package github.com/augceo/agent/mcp) for the command's duration and
// register their tools on [Env.Registry]; a name taken there already is
// an error, so give the server a prefix. run and request put one tool
// message at the start of the context that offers them all, with their
// definitions, unless the Idea's context offers some of them itself and
// so chose among them. The message renders no text, so it is part of the
// prefix every request repeats. A durable run saves the servers with its
// settings (agent.RunSettings.MCP) and resume and continue start them
// again. A server
// that does not start fails the command, naming it, and leaves no run
// behind.
//
// mcp serve serves the registry's tools (every one, or those --tool
// names) and the Ideas of --idea as MCP tools, over [Env.Stdin] and
// [Env.Stdout], until standard input closes or ctx is cancelled, which
// cancels the calls in flight; logs go to [Env.Stderr]. The servers its
// Ideas list are connected while it runs. --model is needed for Ideas, and for latent tools and delegates,
// whose calls fail without one.
//
// # Exit status
//
// 0 on success; 1 on an error; 2 on a usage error; 3 when a run ended but
// some of its calls failed; 130 when a run was interrupted. Help asked
// for with --help, -h or "acts help" exits 0.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/runes"
	"github.com/augceo/agent/provider"
)

// Env is what the commands run with. The zero value uses
// agent.DefaultRegistry, the process's standard streams and no model
// providers.
type Env struct {
	// Registry holds the tools and activities runs can use. run,
	// request, resume and continue register the tools of an Idea's MCP
	// servers on it for as long as they run; mcp serve serves its tools.
	Registry *agent.Registry
	// Name is how a user runs the program, as the usage and the commands
	// the output suggests next (trace: NAME log RUN) spell it; empty
	// means acts. A program with activities of its own names itself, as
	// examples/orders does: acts lacks its activities, so acts resume
	// could not go on with its runs.
	Name   string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Providers builds the provider a command calls for --model
	// NAME:MODEL, with --base-url as baseURL (or, on resume, the model
	// and base URL the run was made with). Main wraps what it returns in
	// provider.Retry. For a name it does not know it returns an error
	// wrapping [ErrUnknownProvider]; ctx bounds any I/O it does.
	//
	// Nil means the program has no model providers: commands that need a
	// model fail saying so, and a model named only by ACTS_MODEL is
	// ignored where none is needed. cmd/acts sets it to providers.New.
	// Keeping it nil keeps the provider SDKs out of the program.
	Providers func(ctx context.Context, name, model, baseURL string) (provider.Provider, error)
}

// name is the program's name: Name, else acts.
func (e *Env) name() string {
	if e.Name == "" {
		return "acts"
	}
	return e.Name
}

// Exit statuses of Main besides 0, 1 and 2.
const (
	ExitCallsFailed = 3   // the run ended, and some calls failed
	ExitInterrupted = 130 // the run was interrupted (Ctrl-C); resume continues it
)

// A command is one of acts' commands.
type command struct {
	name     string
	synopsis []string // usage lines, after the program's name
	summary  string   // what it does, for the list of commands
	doc      string   // what it does, a paragraph for its help
	// setup registers the command's flags on fs and returns the function
	// that runs it, given the arguments left once they are parsed.
	setup func(fs *flag.FlagSet) func(ctx context.Context, env *Env, pos []string) error
}

// commands are acts' commands, in the order the usage lists them.
var commands = []*command{runCommand, resumeCommand, continueCommand, runsCommand, logCommand, forkCommand, requestCommand, planCommand, resolveCommand, mcpCommand}

func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// usage is the global usage of the program called name.
func usage(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s COMMAND [ARGUMENTS] [FLAGS]\n\nCommands:\n", name)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(&b, `
Run "%[1]s help COMMAND" or "%[1]s COMMAND --help" for a command's flags.
Flags may come before or after the arguments.

Exit status: 0 ok, 1 error, 2 usage error, 3 run ended with failed calls,
130 run interrupted (%[1]s resume continues it).
`, name)
	return b.String()
}

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
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage(env.name()))
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(env.Stdout, usage(env.name()))
		return 0
	case "help":
		if len(args) == 1 {
			fmt.Fprint(env.Stdout, usage(env.name()))
			return 0
		}
		name, args = args[1], []string{args[1], "--help"}
	}
	c := lookupCommand(name)
	if c == nil {
		fmt.Fprintf(env.Stderr, "acts: %v: unknown command %q\n%s", errUsage, name, usage(env.name()))
		return 2
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	run := c.setup(fs)
	pos, err := parseFlags(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		if _, err := io.WriteString(env.Stdout, help(env.name(), c, fs, true)); err != nil {
			return 1
		}
		return 0
	}
	if err == nil {
		err = run(ctx, &env, pos)
	}
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(env.Stderr, "acts: %s\n%s", escapeText(err.Error()), help(env.name(), c, fs, false))
		return 2
	case errors.As(err, &ee):
		fmt.Fprintf(env.Stderr, "acts: %s\n", escapeText(err.Error()))
		return ee.code
	default:
		fmt.Fprintf(env.Stderr, "acts: %s\n", escapeText(err.Error()))
		return 1
	}
}

// help is a command's help in the program called name: its synopsis, what
// it does when full, and its flags with their defaults.
func help(name string, c *command, fs *flag.FlagSet, full bool) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, s := range c.synopsis {
		fmt.Fprintf(&b, "  %s %s\n", name, s)
	}
	if full {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.doc))
	}
	if n := flagCount(fs); n > 0 {
		b.WriteString("\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			arg, text := flag.UnquoteUsage(f)
			fmt.Fprintf(&b, "  --%s", f.Name)
			if arg != "" {
				fmt.Fprintf(&b, " %s", arg)
			}
			if !zeroDefault(f) {
				text += fmt.Sprintf(" (default %s)", defaultText(f))
			}
			b.WriteString("\n")
			for _, l := range wrap(text, 72) {
				fmt.Fprintf(&b, "        %s\n", l)
			}
		})
	}
	if !full {
		fmt.Fprintf(&b, "\nRun \"%s %s --help\" for more.\n", name, c.name)
	}
	return b.String()
}

func flagCount(fs *flag.FlagSet) int {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n
}

// zeroDefault reports whether a flag's default is its type's zero value,
// which help leaves out.
func zeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// defaultText is a flag's default as help shows it: quoted for strings,
// as flag.PrintDefaults does.
func defaultText(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return escapeLine(f.DefValue)
}

// wrap breaks text into lines of at most width characters at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// parseFlags parses flags placed anywhere among the arguments and returns
// the positional ones. It returns flag.ErrHelp for -h, -help and --help.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
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

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// provider builds the provider of a model named provider:model.
func (env *Env) provider(ctx context.Context, spec, baseURL string) (provider.Provider, string, error) {
	name, model, ok := strings.Cut(spec, ":")
	if !ok || name == "" || model == "" {
		if spec != "" && spec == os.Getenv("ACTS_MODEL") { // the flag's default, most likely not given
			return nil, "", fmt.Errorf("%w: ACTS_MODEL must be provider:model, got %q", errUsage, spec)
		}
		return nil, "", fmt.Errorf("%w: --model must be provider:model (or set ACTS_MODEL), got %q", errUsage, spec)
	}
	if env.Providers == nil {
		return nil, "", noProviders(spec)
	}
	p, err := env.Providers(ctx, name, model, baseURL)
	switch {
	case errors.Is(err, ErrUnknownProvider):
		return nil, "", fmt.Errorf("%w: --model %s: %w", errUsage, spec, err)
	case err != nil:
		return nil, "", err
	case p == nil:
		return nil, "", fmt.Errorf("cli.Env.Providers returned no provider for %q", spec)
	}
	// A wait the provider asks for (a rate limit's Retry-After) can be
	// minutes long: say so and why, rather than seem to hang. A short
	// backoff is not worth a line, one per call of a run. The calls of a
	// run wait at once, each on its own goroutine: one line at a time.
	var mu sync.Mutex
	onRetry := func(ctx context.Context, err error, d time.Duration) {
		if d >= time.Second {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(env.Stderr, "acts: %s: %s; retrying in %v\n", escapeLine(spec), escapeLine(retryReason(err)), d.Round(time.Millisecond))
		}
	}
	return provider.Retry(p, provider.RetryConfig{OnRetry: onRetry}), model, nil
}

// retryReason says briefly why a request is tried again: the status and
// code of an error response (its message can be a paragraph), the
// timeout that fired, or the first line of another error, cut short.
// The model is left out, since the notice names it already.
func retryReason(err error) string {
	if pe, ok := errors.AsType[*provider.Error](err); ok {
		if pe.Status != 0 {
			short := provider.Error{Status: pe.Status, Code: pe.Code}
			return strings.TrimPrefix(short.Error(), ": ")
		}
		if pe.Err != nil {
			err = pe.Err
			if pe.Code != "" {
				err = fmt.Errorf("%s: %w", pe.Code, pe.Err)
			}
		}
	}
	if te, ok := errors.AsType[*provider.TimeoutError](err); ok {
		short := provider.TimeoutError{Phase: te.Phase, After: te.After}
		return strings.TrimPrefix(short.Error(), ": ")
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return runes.Truncate(s, 100)
}

// noProviders is the error of a command that needs a model in a program
// with no Env.Providers; model is "" when none was named.
func noProviders(model string) error {
	if model != "" {
		model = " for " + model
	}
	return fmt.Errorf("this program has no model providers%s: use the acts command (cmd/acts), or set cli.Env.Providers", model)
}

// readFile reads a file a command names, or standard input for "-".
func readFile(stdin io.Reader, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(file)
}
