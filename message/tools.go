package message

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/augceo/agent/internal/ojson"
)

// OfferedTool is one tool that a tool message offers.
type OfferedTool struct {
	Name string
	// Def is the tool's definition, or nil when the message names a
	// registered tool, whose definition a registry holds.
	Def json.RawMessage
}

// OfferedTools returns the tools a tool message (002) offers, in the
// order it gives them: the registered tool it names ("Tool.name" is
// "name"), the one definition whose _tool property is a const, or each
// tool of a map of names to definitions. It fails when m is not a tool
// message or its tool is none of those.
func (m *Message) OfferedTools() ([]OfferedTool, error) {
	if m.Type != TypeTool {
		return nil, fmt.Errorf("message: a %s message offers no tools", m.Type)
	}
	var name string
	if json.Unmarshal(m.Tool, &name) == nil {
		return []OfferedTool{{Name: strings.TrimPrefix(name, "Tool.")}}, nil
	}
	o, err := ojson.Parse(m.Tool)
	if err != nil {
		return nil, fmt.Errorf("tool: %w", err)
	}
	if n := toolConst(o); n != "" {
		return []OfferedTool{{Name: n, Def: m.Tool}}, nil
	}
	tools := make([]OfferedTool, len(o.Keys))
	for i, n := range o.Keys {
		tools[i] = OfferedTool{Name: n, Def: o.Values[i]}
	}
	return tools, nil
}

// toolConst returns the const of a definition's _tool property, if any.
func toolConst(o *ojson.Object) string {
	props, err := ojson.Parse(o.Get("properties"))
	if err != nil {
		return ""
	}
	var t struct {
		Const string `json:"const"`
	}
	if json.Unmarshal(props.Get("_tool"), &t) != nil {
		return ""
	}
	return t.Const
}
