// Command acts runs and inspects Acts agents from a terminal: durable
// runs of Ideas and plans (with their MCP servers), resume after a crash,
// traces, forks, single Requests, plan checks and references, and serves
// Ideas over MCP (acts mcp serve). See package cli for the commands,
// and "acts help COMMAND" for each one's flags.
//
// acts is package cli with the default registry and the model providers
// of package cli/providers: openai, anthropic, gemini, ollama, and
// OpenAI-compatible servers.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/augceo/agent/cli"
	"github.com/augceo/agent/cli/providers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Main(ctx, os.Args[1:], cli.Env{Providers: providers.New}))
}
