package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// renderText passes text messages through with their role.
func renderText(_ context.Context, b *Build, m *message.Message) error {
	b.Render(provider.Role(m.Role), m.Text)
	return nil
}

// text builds a rendered message.
type text struct{ strings.Builder }

func (t *text) Byte(c byte) { t.WriteByte(c) }

// JSON writes raw indented by two spaces; invalid JSON as it is.
func (t *text) JSON(raw json.RawMessage) { t.WriteString(indent(raw)) }

// renderPlan shows the plan the calls of a previous step formed (012).
func renderPlan(_ context.Context, b *Build, m *message.Message) error {
	intro := "The plan so far; follow it unless the data shows it no longer fits:"
	if bytes.Contains(m.Extra, []byte(`"lazy"`)) {
		intro = "Lazy mode: only plan. Give the whole plan as calls, keeping branching output paths; nothing runs until it is approved. The plan so far:"
	}
	var t text
	t.WriteString("## Plan\n")
	t.WriteString(intro)
	t.Byte('\n')
	t.JSON(m.Plan)
	b.Render(provider.RoleUser, t.String())
	return nil
}

// renderMeta shows the current identity and version and asks for the
// next one in the solution (016).
func renderMeta(_ context.Context, b *Build, m *message.Message) error {
	b.Render(provider.RoleUser, "## Meta\n"+indent(m.Meta))
	b.Check(checkMeta(m.Meta))
	b.Property("meta", json.RawMessage(`{"type":"object","description":"Metadata about the idea, including version and identity. Update it, for example by bumping the version.","properties":{"path":{"type":"string"},"version":{"type":"string"}}}`), true)
	return nil
}

// renderError feeds a failed call back to the model so it can correct it.
func renderError(_ context.Context, b *Build, m *message.Message) error {
	text := "## Error\n" + m.Error
	if m.Failed != nil {
		text = fmt.Sprintf("## Error\nThe call\n%s\nfailed: %s", indent(m.Failed), m.Error)
	}
	b.Render(provider.RoleUser, text)
	return nil
}

// indent is json.Indent with two spaces; invalid JSON stays as it is.
func indent(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}
