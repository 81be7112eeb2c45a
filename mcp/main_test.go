package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverModes are more servers the test binary runs as, by
// ACTS_MCP_TEST_SERVER, registered by the test files of one platform.
var serverModes = map[string]func(){}

// TestMain runs the test server on stdio when the test binary is started
// as one (ACTS_MCP_TEST_SERVER=stdio), a server that dies at once (=die),
// or one of serverModes; otherwise the tests.
func TestMain(m *testing.M) {
	if f, ok := serverModes[os.Getenv("ACTS_MCP_TEST_SERVER")]; ok {
		f()
		os.Exit(0)
	}
	switch os.Getenv("ACTS_MCP_TEST_SERVER") {
	case "stdio":
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "die":
		fmt.Fprintln(os.Stderr, "cannot open the database")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// testServer is an MCP server made with the SDK alone. It lists its
// tools two a page, so clients must follow the cursor.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "v1"}, &sdk.ServerOptions{PageSize: 2})
	s.AddTool(&sdk.Tool{
		Name:         "add",
		Description:  "Adds two numbers.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		out := map[string]float64{"sum": in.A + in.B}
		b, _ := json.Marshal(out)
		return &sdk.CallToolResult{StructuredContent: out, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	})
	s.AddTool(&sdk.Tool{
		Name:        "echo",
		Description: "Says the text back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil
	})
	s.AddTool(&sdk.Tool{
		Name:        "json_text",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "{\"x\": [1, 2]}\n"}}}, nil
	})
	s.AddTool(&sdk.Tool{
		Name:        "fail",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"why":{"type":"string"}}}`),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Why string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "boom: " + in.Why}}}, nil
	})
	s.AddTool(&sdk.Tool{
		Name:        "nested",
		Description: "Returns the point's x.",
		InputSchema: json.RawMessage(`{"type":"object","$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},"properties":{"at":{"$ref":"#/$defs/point","description":"Where."}},"required":["at"]}`),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ At struct{ X int } }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return &sdk.CallToolResult{StructuredContent: map[string]int{"x": in.At.X}}, nil
	})
	s.AddTool(&sdk.Tool{
		Name:        "crash",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if os.Getenv("ACTS_MCP_TEST_SERVER") == "" {
			return nil, fmt.Errorf("crash runs only in a server process")
		}
		fmt.Fprintln(os.Stderr, "out of memory")
		os.Exit(3)
		return nil, nil
	})
	return s
}
