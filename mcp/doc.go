// Package mcp connects Acts agents to the Model Context Protocol, both
// ways, on the official SDK (github.com/modelcontextprotocol/go-sdk).
//
// MCP is how most tools are published today: a server lists tools, each
// a name, a description and JSON Schemas for its input and output, and
// runs calls to them. An Acts tool is the same thing, a schema, with an
// [agent.Activity] bound to it (pages 002 and 003), so the two map onto
// each other directly.
//
// # Client: MCP tools in an agent
//
// [Connect] starts an MCP server program (stdio) or reaches a streamable
// HTTP endpoint, as an [agent.MCPServer] describes it, and performs the
// handshake. [Client.Register] lists the server's tools and registers
// each on an [agent.Registry]: its input schema as the tool's parameters,
// its output schema as the tool's _output, and an Activity that calls it.
// A run offers a registered tool to the model with a tool message that
// names it, {"type":"tool","tool":"git_log"}.
//
//	c, err := mcp.Connect(ctx, agent.MCPServer{Command: []string{"mcp-server-git"}, Prefix: "git_"})
//	if err != nil { ... }
//	defer c.Close()
//	names, err := c.Register(ctx, reg)
//
// An Idea file lists its servers under "mcp"; [ConnectIdea] connects them
// all and registers their tools in one call.
//
// # Server: Acts tools and Ideas over MCP
//
// [NewServer] returns an SDK server that serves registered tools (their
// activities run as a plan of one call) and saved Ideas (each call runs
// the Idea with [agent.Run], the arguments as its input). Run it on any
// SDK transport; over stdio:
//
//	srv, err := mcp.NewServer(mcp.ServerConfig{Agent: cfg, Tools: []string{"weather"}, Ideas: ideas})
//	if err != nil { ... }
//	err = srv.Run(ctx, &sdk.StdioTransport{})
//
// Errors of tools and runs come back to the MCP client as results with
// isError set, whose text says what went wrong, not as protocol errors,
// so a model on the other side can read them and correct itself.
package mcp
