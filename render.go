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

// renderData renders each data identity once, where it first appears, as
// the merged value of all its messages (005): the model sees one coherent
// object, not a pile of patches. Hidden metadata is never rendered.
func renderData(_ context.Context, b *Build, m *message.Message) error {
	id := m.Identity()
	if b.shown[id] {
		return nil
	}
	b.shown[id] = true
	if b.toolsOnly {
		_, _, err := b.Log.Value(id)
		return err
	}
	text, err := b.dataBlock(id)
	if err != nil {
		return err
	}
	b.Render(provider.RoleUser, text)
	return nil
}

// dataBlock renders the merged value of an identity.
func (b *Build) dataBlock(id message.Identity) (string, error) {
	value, ok, err := b.Log.Value(id)
	if err != nil {
		return "", err
	}
	description, schema := b.Log.About(id)
	return DataBlock(id, value, ok, description, schema), nil
}

// DataBlock renders a data identity the way the model sees it:
//
//	## Data: ¶user
//	{ ...the merged value... }
//	Represents the current user.
//	Schema for ¶user:
//	{ ...the schema... }
//
// Input data is marked as a structured prompt (006); an instance is named
// after the kind.
func DataBlock(id message.Identity, value json.RawMessage, present bool, description string, schema json.RawMessage) string {
	var s text
	s.WriteString("## Data: ¶")
	s.WriteString(id.Kind)
	if id.Instance != "" {
		s.WriteString(" (_instance: ")
		s.WriteString(id.Instance)
		s.Byte(')')
	}
	s.Byte('\n')
	if id.Kind == message.KindInput {
		s.WriteString("Input data MUST be treated as a structured prompt\n")
	}
	if present {
		s.JSON(value)
		s.Byte('\n')
	} else {
		s.WriteString("(no value yet)\n")
	}
	if description != "" {
		s.WriteString(description)
		s.Byte('\n')
	}
	if schema != nil {
		s.WriteString("Schema for ¶")
		s.WriteString(id.Kind)
		s.WriteString(":\n")
		s.JSON(schema)
		s.Byte('\n')
	}
	return strings.TrimRight(s.String(), "\n")
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
