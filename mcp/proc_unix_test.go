//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/mcp"
)

func init() {
	// A server whose tool "group" says the process group it runs in.
	serverModes["group"] = func() {
		s := sdk.NewServer(&sdk.Implementation{Name: "group", Version: "v1"}, nil)
		s.AddTool(&sdk.Tool{Name: "group", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(syscall.Getpgrp())}}}, nil
			})
		if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// TestServerProcessGroup: a stdio server runs in a process group of its
// own, which a terminal's Ctrl-C, sent to the foreground group, does not
// reach.
func TestServerProcessGroup(t *testing.T) {
	c, err := mcp.Connect(t.Context(), agent.MCPServer{Name: "group", Command: []string{os.Args[0]}, Env: []string{"ACTS_MCP_TEST_SERVER=group"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Session().CallTool(t.Context(), &sdk.CallToolParams{Name: "group", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*sdk.TextContent).Text
	if ours := fmt.Sprint(syscall.Getpgrp()); got == ours {
		t.Errorf("the server runs in this process's group %s: Ctrl-C would reach it", ours)
	}
}
