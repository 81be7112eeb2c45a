package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/mcp"
	"github.com/augceo/agent/message"
)

// connectMCP connects the MCP servers of a command's Idea (or of the
// run it resumes) for the command's duration, registering their tools on
// env.Registry. It returns the names registered and the function that
// closes the sessions, which reports a failure to close on standard
// error, unless the command was interrupted: the command's work is done
// by then, and a server stopped by the same Ctrl-C says nothing useful.
// what names the Idea file or the run, for errors.
func connectMCP(ctx context.Context, env *Env, what string, servers []agent.MCPServer) (names []string, closeAll func(), err error) {
	closeAll = func() {}
	if len(servers) == 0 {
		return nil, closeAll, nil
	}
	closer, names, err := mcp.ConnectIdea(ctx, &agent.Idea{MCP: servers}, env.Registry)
	if err != nil {
		return nil, closeAll, fmt.Errorf("%s: %w", what, err)
	}
	return names, func() {
		if err := closer(); err != nil && ctx.Err() == nil {
			fmt.Fprintf(env.Stderr, "acts: %s\n", escapeText(err.Error()))
		}
	}, nil
}

// offerMCP returns msgs with one tool message in front that offers the
// MCP tools named, with their definitions ([agent.Registry.Offer]), so
// that a durable run's journal holds them. A context whose tool messages
// offer some of the tools already chose among them: it is returned as it
// is, as is one when there are no tools.
//
// The message goes first: it renders no text (tool definitions go into
// the composed schema, which providers send ahead of every message), so
// wherever it stands before the first request it is part of the prefix
// every request of the run repeats, and the Idea's messages keep their
// order after it.
func offerMCP(reg *agent.Registry, names []string, msgs []message.Message) ([]message.Message, error) {
	if len(names) == 0 {
		return msgs, nil
	}
	offered := offeredTools(msgs)
	for _, n := range names {
		if offered[n] {
			return msgs, nil
		}
	}
	m, err := reg.Offer(names...)
	if err != nil {
		return nil, err
	}
	return append([]message.Message{m}, msgs...), nil
}

// offeredTools returns the names of the tools the tool messages of msgs
// offer; a message that offers none it can read is left out.
func offeredTools(msgs []message.Message) map[string]bool {
	offered := map[string]bool{}
	for i := range msgs {
		if msgs[i].Type != message.TypeTool {
			continue
		}
		tools, _ := msgs[i].OfferedTools()
		for _, t := range tools {
			offered[t.Name] = true
		}
	}
	return offered
}

var mcpCommand = &command{
	name:     "mcp",
	synopsis: []string{"mcp serve [--tool NAME]... [--idea NAME=FILE]... [--model provider:model] [--base-url URL]"},
	summary:  "serve the program's tools and Ideas over MCP (stdio)",
	doc: `
Serves tools and Ideas to an MCP client over standard input and output:
nothing else goes to standard output, and logs go to standard error. It
runs until standard input closes or the command is interrupted. --tool
names a registered tool to serve (by default every registered tool); a
call runs it as a plan of one call. --idea serves the Idea in FILE as the
tool NAME: its input declaration is the input schema, its schema the
output schema, and a call runs it with the arguments as its input. The
MCP servers an Idea lists are connected while the command runs, each
distinct one once, and their tools offered to its runs as acts run does.
--model is needed for --idea (the command fails without it) and for tools
that need a model, latent tools and delegates (their calls fail without
it).`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var tools []string
		var ideas []string
		fs.Func("tool", "serve the registered tool `NAME` (repeatable; default: every registered tool)", func(s string) error {
			if s == "" {
				return errors.New("empty tool name")
			}
			tools = append(tools, s)
			return nil
		})
		fs.Func("idea", "serve the Idea in FILE as the tool NAME (`NAME=FILE`, repeatable)", func(s string) error {
			if name, file, ok := strings.Cut(s, "="); !ok || name == "" || file == "" {
				return fmt.Errorf("%q is not NAME=FILE", s)
			}
			ideas = append(ideas, s)
			return nil
		})
		model := fs.String("model", os.Getenv("ACTS_MODEL"), "`provider:model` that runs the Ideas and the tools that need a model; ACTS_MODEL sets the default")
		baseURL := fs.String("base-url", "", "the provider's API base `URL` (OpenAI-compatible servers, proxies)")
		return func(ctx context.Context, env *Env, pos []string) error {
			if len(pos) != 1 || pos[0] != "serve" {
				return fmt.Errorf("%w: mcp takes serve", errUsage)
			}
			return mcpServe(ctx, env, fs, tools, ideas, *model, *baseURL)
		}
	},
}

// mcpServe serves tools and Ideas over MCP on the command's standard
// input and output: acts mcp serve.
func mcpServe(ctx context.Context, env *Env, fs *flag.FlagSet, tools, ideaSpecs []string, model, baseURL string) error {
	ideas := map[string]*agent.Idea{}
	files := map[string]string{}
	for _, spec := range ideaSpecs {
		name, file, _ := strings.Cut(spec, "=")
		if _, ok := ideas[name]; ok {
			return fmt.Errorf("%w: --idea %s: two Ideas are named %q", errUsage, spec, name)
		}
		idea, err := readIdea("mcp serve", []string{file})
		if err != nil {
			return err
		}
		ideas[name], files[name] = idea, file
	}
	// Every registered tool, before the Ideas' MCP servers add theirs:
	// those are the Ideas' own, not the program's.
	if len(tools) == 0 {
		tools = env.Registry.ToolNames()
	}
	if len(tools) == 0 && len(ideas) == 0 {
		if acts := env.Registry.ActivityNames(); len(acts) > 0 {
			// Activities bound to tools an Idea defines: MCP clients need
			// the tools' schemas, which only the Idea has.
			return fmt.Errorf("%w: nothing to serve: the program registers activities (%s) but no tools; their schemas are in an Idea's tool messages: give --idea NAME=FILE, or register the tools (Registry.Tool)", errUsage, strings.Join(acts, ", "))
		}
		return fmt.Errorf("%w: nothing to serve: the program registers no tools; give --idea NAME=FILE", errUsage)
	}
	cfg := agent.Config{
		Registry: env.Registry,
		// Standard output is the protocol's: logs go to standard error.
		Logger: slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if model != "" && (env.Providers != nil || isSet(fs, "model")) {
		p, name, err := env.provider(ctx, model, baseURL)
		if err != nil {
			return err
		}
		cfg.Provider, cfg.Model = p, name
	}
	if len(ideas) > 0 && cfg.Provider == nil {
		if env.Providers == nil {
			return fmt.Errorf("--idea runs a model, and %w", noProviders(model))
		}
		return fmt.Errorf("%w: --idea runs a model: give --model (or ACTS_MODEL)", errUsage)
	}
	closeAll, err := connectServed(ctx, env, ideas, files)
	if err != nil {
		return err
	}
	defer closeAll()
	srv, err := mcp.NewServer(mcp.ServerConfig{Agent: cfg, Tools: tools, Ideas: ideas})
	if err != nil {
		return err
	}
	// The SDK does not pass the end of ctx on to the calls in flight, and
	// closing the session waits for them: Ctrl-C would wait for every
	// run to finish. Each call stops when the command does.
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(hctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			hctx, cancel := context.WithCancel(hctx)
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			return next(hctx, method, req)
		}
	})
	// The streams stay the caller's: the transport does not close them.
	t := &sdk.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("mcp serve: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done(): // Ctrl-C: the usual way to stop a server
		_ = ss.Close()
		<-ended
		return nil
	case err := <-ended: // standard input closed
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mcp serve: %w", err)
		}
		return nil
	}
}

// connectServed connects the MCP servers the served Ideas list, each
// distinct server once, and offers each Idea its servers' tools as
// offerMCP does. On error it closes what it opened.
func connectServed(ctx context.Context, env *Env, ideas map[string]*agent.Idea, files map[string]string) (closeAll func(), err error) {
	var servers []agent.MCPServer
	var closers []func()
	var names [][]string // the tools of servers[i]
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ideas)) {
		idea := ideas[name]
		var offer []string
		for _, s := range idea.MCP {
			i := slices.IndexFunc(servers, func(t agent.MCPServer) bool { return sameServer(s, t) })
			if i < 0 {
				n, c, err := connectMCP(ctx, env, files[name], []agent.MCPServer{s})
				if err != nil {
					closeAll()
					return nil, err
				}
				servers, closers, names = append(servers, s), append(closers, c), append(names, n)
				i = len(servers) - 1
			}
			offer = append(offer, names[i]...)
		}
		if idea.Context, err = offerMCP(env.Registry, offer, idea.Context); err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", files[name], err)
		}
	}
	return closeAll, nil
}

// sameServer reports whether two descriptions are of one MCP server.
func sameServer(a, b agent.MCPServer) bool {
	return a.Name == b.Name && a.URL == b.URL && a.Prefix == b.Prefix && slices.Equal(a.Command, b.Command) && slices.Equal(a.Env, b.Env)
}

// nopWriteCloser is a writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
