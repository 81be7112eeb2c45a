package mcp

import (
	"errors"
	"fmt"
)

// Sentinel errors of registration.
var (
	// ErrClash reports a tool name that is registered already, or that
	// two tools being registered share (two servers without prefixes,
	// say). Nothing is registered then: give the server a Prefix.
	ErrClash = errors.New("mcp: tool name taken")
	// ErrSchema reports an MCP tool whose schemas cannot define an Acts
	// tool: not a JSON Schema object, or a parameter whose name starts
	// with "_", which Acts keeps for meta-properties.
	ErrSchema = errors.New("mcp: invalid tool schema")
)

// ToolError is the error an MCP tool reported: a result with isError
// set. The activity behind the tool returns it, so the model sees Text
// as the runtime error of its call.
type ToolError struct {
	Server string // the server, as errors name it
	Tool   string // the tool's name on the server
	Text   string // the result's text content
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("mcp: server %q: tool %q: %s", e.Server, e.Tool, e.Text)
}
