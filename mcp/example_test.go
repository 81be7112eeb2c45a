package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/mcp"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// An MCP server's tool, called by the agent loop. The server runs in
// memory here; mcp.Connect starts a program or reaches a URL instead.
func ExampleClient_Register() {
	ctx := context.Background()
	server := sdk.NewServer(&sdk.Implementation{Name: "shop", Version: "v1"}, nil)
	type stockIn struct {
		Item string `json:"item"`
	}
	type stockOut struct {
		Count int `json:"count"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "stock", Description: "How many of an item are in stock."},
		func(_ context.Context, _ *sdk.CallToolRequest, in stockIn) (*sdk.CallToolResult, stockOut, error) {
			return nil, stockOut{Count: len(in.Item)}, nil
		})
	serverSide, clientSide := sdk.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverSide, nil); err != nil {
		fmt.Println(err)
		return
	}

	c, err := mcp.ConnectTransport(ctx, clientSide, "shop", "shop_")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	reg := agent.NewRegistry()
	names, err := c.Register(ctx, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names)

	// A scripted model calls the tool, then answers with what it wrote.
	model := scripted.Solutions(
		`{"calls":[{"_tool":"shop_stock","item":"kettle","_outputPath":"†state.kettles"}],"output":null}`,
		`{"calls":[],"output":{"inStock":6}}`,
	)
	msgs := []message.Message{
		{Type: message.TypeTool, Tool: json.RawMessage(`"shop_stock"`)},
		message.Text("How many kettles are in stock?"),
	}
	res, err := agent.Run(ctx, agent.Config{Provider: model, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	kettles, _ := res.Log.Lookup("state", []string{"kettles"})
	fmt.Println(string(kettles), string(res.Solution.Output))
	// Output:
	// [shop_stock]
	// {"count":6} {"inStock":6}
}

// A registered tool served over MCP, called by an MCP client.
func ExampleNewServer() {
	ctx := context.Background()
	reg := agent.NewRegistry()
	reg.Tool("greet", json.RawMessage(`{"type":"object","description":"Greets someone.","properties":{"name":{"type":"string"}},"required":["name"]}`))
	reg.Activity("greet", agent.Bind(func(_ context.Context, p struct {
		Name string `json:"name"`
	}) (string, error) {
		return "Hello, " + p.Name + "!", nil
	}))
	srv, err := mcp.NewServer(mcp.ServerConfig{Agent: agent.Config{Registry: reg}, Tools: []string{"greet"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// `acts mcp serve` would run srv.Run(ctx, &sdk.StdioTransport{}).
	serverSide, clientSide := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
		fmt.Println(err)
		return
	}
	session, err := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// A result that is not an object comes as JSON text only.
	fmt.Println(res.IsError, res.Content[0].(*sdk.TextContent).Text)
	// Output: false "Hello, Ada!"
}
