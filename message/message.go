package message

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/augceo/agent/ref"
)

// Type is the type of a message.
type Type string

// The built-in message types. Other types are kept as they are (their
// fields in Extra) for handlers registered by the user.
const (
	TypeText    Type = "text"
	TypeData    Type = "data"
	TypeTool    Type = "tool"
	TypePlan    Type = "plan"
	TypeMeta    Type = "meta"
	TypeAdvisor Type = "advisor"
	TypeError   Type = "error"
	// TypeCompaction marks where a run's rendered context was folded
	// into a snapshot: what comes before it is rendered as the current
	// value of each identity, the last plan and its errors. It holds
	// nothing else; the messages before it stay in the log.
	TypeCompaction Type = "compaction"
	// TypePreset names a preset (801), {"type":"preset","preset":"Name"},
	// whose messages and settings stand in its place (its fields are in
	// Extra).
	TypePreset Type = "preset"
)

// Role is the speaker of a text message.
type Role string

// The roles of text messages.
const (
	RoleUser      Role = "user"
	RoleSystem    Role = "system"
	RoleAssistant Role = "assistant"
)

// Common data kinds.
const (
	KindData  = "data"
	KindInput = "input"
	KindState = "state"
)

// Message is one entry of a context, in canonical form. Which fields are
// set depends on Type. Raw JSON fields are compact. A [Log] keeps copies
// of the messages appended to it and hands out copies, so a Message is
// always its holder's to change.
type Message struct {
	Type Type
	Role Role   // text: who speaks (user when unset)
	Text string // text: the content

	Kind        string          // data: identity kind, "data" when unset
	Instance    string          // _instance: the instance this message belongs to
	Description string          // data: what the data means
	Schema      json.RawMessage // data and advisor: JSON Schema of the payload
	Data        json.RawMessage // data: the payload; nil when only a schema is declared

	Tool    json.RawMessage // tool: the definitions (an object name → schema, or a tool name)
	Plan    json.RawMessage // plan: the array of calls
	Meta    json.RawMessage // meta: identity and version
	Advisor *Advisor        // advisor: the definition

	Failed json.RawMessage // error: the call that failed
	Error  string          // error: what went wrong

	Call       json.RawMessage // _call: the call that produced this output (hidden)
	Date       string          // _date: when the output was written, RFC 3339 (hidden)
	Method     ref.Method      // _outputMethod: how it combines with earlier writes (hidden)
	OutputPath string          // _outputPath: the single reference written, e.g. "†state.user" (hidden)

	// Extra holds every other field as a JSON object with sorted keys, so
	// custom message types and unknown fields survive a round trip.
	Extra json.RawMessage
}

// Advisor is the definition carried by an advisor message (017), or
// the name of a registered one (801).
type Advisor struct {
	// Name, when set, names an advisor registered with the registry
	// ({"type":"advisor","advisor":"riskAnalyst"}): its definition comes
	// from there, and only On and Scopes, when given, change it.
	Name        string
	ID          string
	Role        string   // what the advisor does, in words
	On          string   // start, finish, request or demand
	Scopes      []string // what of the context the advisor sees
	IsInstanced bool
}

// IsData reports whether m is a data message (including input and state).
func (m *Message) IsData() bool { return m.Type == TypeData }

// Identity names the value a data message contributes to: messages with the
// same kind and instance merge (005).
type Identity struct {
	Kind     string
	Instance string // "" for global data
}

// Identity returns the identity of a data message.
func (m *Message) Identity() Identity { return Identity{Kind: m.Kind, Instance: m.Instance} }

// Text returns a user text message.
func Text(s string) Message { return Message{Type: TypeText, Role: RoleUser, Text: s} }

// Assistant returns an assistant text message: what the model answered,
// as a conversation's next turn shows it.
func Assistant(s string) Message { return Message{Type: TypeText, Role: RoleAssistant, Text: s} }

// System returns a system text message: instructions, {"type":"system",
// "message":"..."} in the protocol's spelling.
func System(s string) Message { return Message{Type: TypeText, Role: RoleSystem, Text: s} }

// Data returns a data message of kind holding data.
func Data(kind string, data json.RawMessage) Message {
	return Message{Type: TypeData, Kind: kind, Data: data}
}

// Input returns an input message (006) holding v encoded as JSON: the
// structured prompt of a request, which calls read as †input.path. Set
// its Schema (schema.For of v's type, say) to tell the model what the
// fields mean. It fails only when encoding/json cannot encode v.
func Input(v any) (Message, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the model reads "<", not "\u003c"
	if err := enc.Encode(v); err != nil {
		return Message{}, fmt.Errorf("message: input: %w", err)
	}
	return Data(KindInput, bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// Tool returns a tool message (002) naming a registered tool,
// {"type":"tool","tool":"name"}: it offers that tool to the model, whose
// definition the request takes from its registry. A tool that is
// registered but not offered by any tool message cannot be called.
func Tool(name string) Message {
	var b bytes.Buffer
	writeString(&b, name)
	return Message{Type: TypeTool, Tool: b.Bytes()}
}
