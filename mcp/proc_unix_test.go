//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

func init() {
	// A server whose tool "spawn" starts a program that outlives it, and
	// says its pid: a helper a server left behind, holding the server's
	// standard error.
	serverModes["spawn"] = func() {
		s := sdk.NewServer(&sdk.Implementation{Name: "spawn", Version: "v1"}, nil)
		s.AddTool(&sdk.Tool{Name: "spawn", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				cmd := exec.Command("sleep", "60")
				cmd.Stderr = os.Stderr
				if err := cmd.Start(); err != nil {
					return nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(cmd.Process.Pid)}}}, nil
			})
		if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// TestCloseStopsProcessGroup: Close stops what a server's program
// started, once the program has exited, and does not wait for it.
func TestCloseStopsProcessGroup(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep program")
	}
	c, err := mcp.Connect(t.Context(), agent.MCPServer{Name: "spawn", Command: []string{os.Args[0]}, Env: []string{"ACTS_MCP_TEST_SERVER=spawn"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Session().CallTool(t.Context(), &sdk.CallToolParams{Name: "spawn", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(res.Content[0].(*sdk.TextContent).Text)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	// The helper is gone: no such process, or a zombie its new parent has
	// yet to reap.
	for range 100 {
		if !running(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d, started by the server, still runs after Close", pid)
}

// running reports whether the process pid exists and is not a zombie.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err) // no /proc: take the signal's word
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
