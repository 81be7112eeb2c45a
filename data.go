package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
)

// Data (005), Input (006) and State (009) are data messages: a kind, an
// optional _instance (013), a payload, a description and a schema. Input
// is what the caller gives (rendered as a structured prompt); state is
// what calls write with _outputPath (008). The log (package message)
// merges each identity's messages; this file renders them for the model.

// Rendering is how a run shows its data to the model.
type Rendering string

// The renderings.
const (
	// RenderCached, the default, renders each message once, as the log
	// stood when it was appended, and never again differently: every
	// request starts with the bytes of the one before, which a provider's
	// prompt cache serves at a fraction of the price. The first message
	// of a data identity shows its value then; each later one shows what
	// it changed (the method, the path and the value written), so the
	// model always knows the current value.
	RenderCached Rendering = "cached"
	// RenderSnapshot renders each data identity once, where it first
	// appears, as its merged value over the whole log: one coherent
	// object, at the cost of an early message changing at every write
	// (and every byte after it missing the cache). For short runs and
	// weak models.
	RenderSnapshot Rendering = "snapshot"
)

// Check reports a rendering that is none of the above, as an error
// wrapping ErrRendering ("" is the default).
func (r Rendering) Check() error {
	switch r {
	case "", RenderCached, RenderSnapshot:
		return nil
	}
	return fmt.Errorf("%w %q (use %q or %q)", ErrRendering, string(r), RenderCached, RenderSnapshot)
}

// renderData renders a data message (005): by default as the log stood
// when it was appended (RenderCached), or each identity once as its
// merged value (RenderSnapshot). Hidden metadata is never rendered.
func renderData(_ context.Context, b *Build, m *message.Message) error {
	if m.Instance != "" && !slices.Contains(b.instances, m.Instance) {
		b.instances = append(b.instances, m.Instance) // calls may now name it
		// While _instance is an enum, it grows, or turns into a string.
		if !b.instancesOpen {
			b.changed = true
			b.instancesOpen = b.contextLen > 0 && (b.Index >= b.contextLen || m.Call != nil || b.planned)
		}
	}
	if b.rendering != RenderSnapshot {
		return b.renderCached(m)
	}
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

// renderCached renders m with what the messages before it say: the
// identity's value when m is its first message, else what m changed.
// A change is what the model needs to keep the value current: after a
// write at a path, the value holds what was written there, so the whole
// value would never be shorter (but for a few bytes of header), and
// reading it would cost a step more as the run's data grows.
func (b *Build) renderCached(m *message.Message) error {
	id := m.Identity()
	first := !b.shown[id]
	if !first {
		// A write that does not combine with the value it lands on fails
		// here, as reading the value would under RenderSnapshot.
		if err := b.seen.Check(*m); err != nil {
			return err
		}
	}
	if err := b.seen.Append(*m); err != nil {
		return err
	}
	b.shown[id] = true
	if m.Call != nil {
		if b.outputs == nil {
			b.outputs, b.failures = map[string]bool{}, map[string]bool{}
		}
		call := compact(m.Call)
		b.outputs[call] = true
		if _, _, value, ok := writeOf(m); ok {
			if e, ok := failureOf(value); ok {
				b.failures[call+"\x00"+e] = true
			}
		}
	}
	if !first {
		if !b.toolsOnly {
			// Right after an update of the same identity, the heading
			// would say again what the reference of the line says: the
			// writes of a step come one after the other.
			heading := b.updated != len(b.messages) || b.updatedID != id
			b.Render(provider.RoleUser, b.said.update(m, heading))
			b.updated, b.updatedID = len(b.messages), id
		}
		return nil
	}
	value, present, err := b.seen.Value(id)
	if err != nil || b.toolsOnly {
		return err
	}
	description, schema := b.seen.About(id)
	b.Render(provider.RoleUser, b.said.block(id, value, present, description, schema))
	return nil
}

// failureOf returns the error of value, when value is what a call writes
// down its failure branch: {"error": "..."}.
func failureOf(value json.RawMessage) (string, bool) {
	if !bytes.HasPrefix(value, []byte(`{"error":`)) {
		return "", false
	}
	var v map[string]json.RawMessage
	var e string
	if json.Unmarshal(value, &v) != nil || len(v) != 1 || json.Unmarshal(v["error"], &e) != nil {
		return "", false
	}
	return e, true
}

// UpdateBlock renders a later message of a data identity the way the
// model sees it under RenderCached: what it wrote, where and how,
//
//	## Data update: ¶state
//	set †state.user.name: "Ada"
//
// then a description or schema the message gives. It is the block as the
// first data block of a request says it; a request says a description or
// schema again only where it differs from the last said of its kind (see
// said).
func UpdateBlock(m *message.Message) string { return new(said).update(m, true) }

// update renders m, a later message of its identity; without its heading
// when heading is false (see renderCached).
func (sd *said) update(m *message.Message, heading bool) string {
	id := m.Identity()
	var s text
	if heading {
		s.heading("Data update", id)
	}
	if method, place, value, ok := writeOf(m); ok {
		s.WriteString(string(method) + " " + place + ": ")
		s.Write(value) // ref.Encode writes it compact
		s.Byte('\n')
	}
	sd.about(&s, id.Kind, m.Description, m.Schema)
	return strings.TrimRight(s.String(), "\n")
}

// writeOf returns what m writes, as the model sees it: the method, the
// place (†state.path) and the value, compact; ok is false when m writes
// nothing.
func writeOf(m *message.Message) (method ref.Method, place string, value json.RawMessage, ok bool) {
	path, method, value, ok, err := m.Write()
	if err != nil || !ok {
		return "", "", nil, false
	}
	place = ref.Dagger + m.Identity().Kind
	if len(path) > 0 {
		place += "." + path.String()
	}
	return method, place, value, true
}

// dataBlock renders the merged value of an identity.
func (b *Build) dataBlock(id message.Identity) (string, error) {
	value, ok, err := b.Log.Value(id)
	if err != nil {
		return "", err
	}
	description, schema := b.Log.About(id)
	return b.said.block(id, value, ok, description, schema), nil
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
// after the kind. It is the block as the first of a request says it: a
// request says each note once, and a description or schema again only
// where it differs from the last said of its kind (see said).
func DataBlock(id message.Identity, value json.RawMessage, present bool, description string, schema json.RawMessage) string {
	return new(said).block(id, value, present, description, schema)
}

// said is what a request's data blocks have said of each kind so far,
// in the order the model reads them. The notes on instances and on input
// are said once, and a description or a schema again only where it
// differs from the last one said of the kind: every block used to say
// them all, so a context of a hundred instanced orders repeated them a
// hundred times, in every request of the run. What a block says depends
// only on the blocks before it, so it renders the same at every step; a
// compaction, which renders its blocks anew, starts over.
type said struct {
	input bool                   // the note on input was said
	kinds map[string]*saidOfKind // what was said of each kind
}

// saidOfKind is what a request's data blocks have said of one kind.
type saidOfKind struct {
	instances   bool   // the note on instances was said
	description string // the last description said
	schema      string // the last schema said, compact
}

// of returns what was said of kind, empty at first.
func (sd *said) of(kind string) *saidOfKind {
	k := sd.kinds[kind]
	if k == nil {
		if sd.kinds == nil {
			sd.kinds = map[string]*saidOfKind{}
		}
		k = &saidOfKind{}
		sd.kinds[kind] = k
	}
	return k
}

// block renders the first block of a data identity.
func (sd *said) block(id message.Identity, value json.RawMessage, present bool, description string, schema json.RawMessage) string {
	var s text
	s.heading("Data", id)
	if k := sd.of(id.Kind); id.Instance != "" && !k.instances {
		k.instances = true
		s.WriteString("Each _instance of ¶" + id.Kind + " overrides the global ¶" + id.Kind + " field by field for calls of that instance\n")
	}
	if id.Kind == message.KindInput && !sd.input {
		sd.input = true
		s.WriteString("Input data MUST be treated as a structured prompt\n")
	}
	if present {
		s.JSON(value)
		s.Byte('\n')
	} else {
		s.WriteString("(no value yet)\n")
	}
	sd.about(&s, id.Kind, description, schema)
	return strings.TrimRight(s.String(), "\n")
}

// heading writes a data block's first line: "## Data: ¶state", with the
// instance when there is one.
func (t *text) heading(title string, id message.Identity) {
	t.WriteString("## " + title + ": ¶" + id.Kind)
	if id.Instance != "" {
		t.WriteString(" (_instance: " + id.Instance + ")")
	}
	t.Byte('\n')
}

// about writes to t what a data message says of its kind: its
// description and its schema, each unless it is the last said of kind.
func (sd *said) about(t *text, kind, description string, schema json.RawMessage) {
	k := sd.of(kind)
	if description != "" && k.description != description {
		k.description = description
		t.WriteString(description)
		t.Byte('\n')
	}
	if schema == nil {
		return
	}
	if c := compact(schema); k.schema != c {
		k.schema = c
		t.WriteString("Schema for ¶" + kind + ":\n")
		t.WriteString(c)
		t.Byte('\n')
	}
}
