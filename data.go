package agent

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// Data (005), Input (006) and State (009) are data messages: a kind, an
// optional _instance (013), a payload, a description and a schema. Input
// is what the caller gives (rendered as a structured prompt); state is
// what calls write with _outputPath (008). The log (package message)
// merges each identity's messages; this file renders them for the model.

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
