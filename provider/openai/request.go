package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3/shared"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
)

// Thinking budgets, in tokens, up to which [Provider.Generate] asks for
// each reasoning_effort; above MediumEffortMax it asks for "high".
const (
	LowEffortMax    = 2048
	MediumEffortMax = 8192
)

// jsonModeInstruction introduces the schema in the system message in
// JSONMode. OpenAI's json_object mode also requires the word JSON in the
// messages.
const jsonModeInstruction = "Answer with one JSON object that follows this JSON Schema:\n"

// requestBody is the Chat Completions request body. The fields that
// encoding/json writes are in the order the SDK's params type has them;
// response_format and stream, which come after them, are the unexported
// fields, which [requestBody.marshal] writes.
type requestBody struct {
	Messages            []message      `json:"messages"`
	Model               string         `json:"model"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	N                   int            `json:"n,omitempty"`
	PromptCacheKey      string         `json:"prompt_cache_key,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`

	schemaName string // the name of schema
	schema     string // the adapted schema, for strict structured outputs
	loose      bool   // schema is over strict mode's limits: "strict":false
	jsonObject bool   // JSON mode: {"type":"json_object"}
	stream     bool
}

type message struct {
	Content string        `json:"content"`
	Role    provider.Role `json:"role"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// request maps req onto the request body. It copies what it needs and
// never modifies req.
func (p *Provider) request(req *provider.Request) (*requestBody, error) {
	b := &requestBody{Model: firstNonEmpty(req.Model, p.cfg.Model), stream: req.Stream}
	if b.Model == "" {
		return nil, fmt.Errorf("%w: set Request.Model or Config.Model", ErrNoModel)
	}
	// Nothing is sent for provider.CacheLong: GPT-5.5 keeps prefixes for
	// 24 hours, and so do earlier models for organisations without zero
	// data retention; GPT-5.6 and later refuse prompt_cache_retention,
	// and earlier ones the prompt_cache_options that replace it.
	if err := req.CacheRetention.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", p.cfg.Name, err)
	}
	msgs := req.Messages
	if req.Schema != nil {
		if p.cfg.JSONMode {
			msgs = withSchemaInstruction(msgs, req.Schema)
			b.jsonObject = true
		} else {
			adapted, over, err := schema.AdaptStrict(req.Schema, schema.OpenAI)
			if err != nil {
				return nil, fmt.Errorf("%s: adapt schema: %w", p.cfg.Name, err)
			}
			// A schema over the limits of strict mode (nested too deep, too
			// large) is sent with strict off: the model is guided by it, and
			// the answer is validated locally.
			b.schema, b.loose = adapted, over != nil
			b.schemaName = firstNonEmpty(req.SchemaName, DefaultSchemaName)
		}
	}
	b.Messages = make([]message, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case provider.RoleSystem, provider.RoleUser, provider.RoleAssistant:
			b.Messages[i] = message{Content: m.Text, Role: m.Role}
		default:
			return nil, fmt.Errorf("%w %q in message %d", ErrUnknownRole, m.Role, i)
		}
	}
	if req.N > 1 && !p.cfg.SingleChoice {
		b.N = req.N
	}
	if req.Temperature != nil {
		t := *req.Temperature
		b.Temperature = &t
	}
	if req.MaxTokens > 0 {
		if p.cfg.LegacyMaxTokens {
			b.MaxTokens = req.MaxTokens
		} else {
			b.MaxCompletionTokens = req.MaxTokens
		}
	}
	b.ReasoningEffort = string(effort(req.Thinking, p.cfg.ThinkingOff))
	if req.Stream {
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.CacheKey != "" && !p.cfg.NoPromptCacheKey {
		// Routes the requests that share a prefix to the same cache.
		b.PromptCacheKey = req.CacheKey
	}
	return b, nil
}

// marshal encodes b byte for byte as the SDK encodes its params
// (TestRequestBodySDK): without HTML escapes, and with "stream":true
// last, as the SDK's streaming call adds it. It writes the adapted schema
// as it is, without encoding/json: schema.Adapt returns compact JSON, which
// a json.RawMessage field would scan again, and for a composed schema of
// ten tools (5 KB and more) that scan cost as much as the rest of the
// request. It fails only for a temperature that is NaN or infinite.
func (b *requestBody) marshal() ([]byte, error) {
	n := len(b.schema) + 512 // the body's size, give or take the escapes
	for _, m := range b.Messages {
		n += len(m.Content) + len(m.Content)/8 + 32
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - len("}\n")) // reopen the object
	switch {
	case b.schema != "":
		buf.WriteString(`,"response_format":{"json_schema":{"name":`)
		if err := enc.Encode(b.schemaName); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - len("\n"))
		if b.loose {
			buf.WriteString(`,"strict":false,"schema":`)
		} else {
			buf.WriteString(`,"strict":true,"schema":`)
		}
		buf.WriteString(b.schema)
		buf.WriteString(`},"type":"json_schema"}`)
	case b.jsonObject:
		buf.WriteString(`,"response_format":{"type":"json_object"}`)
	}
	if b.stream {
		buf.WriteString(`,"stream":true`)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// effort maps a thinking budget onto reasoning_effort: 0 leaves it unset,
// a negative budget sends off, up to LowEffortMax tokens "low", up to
// MediumEffortMax "medium", and above that "high".
func effort(budget int, off string) shared.ReasoningEffort {
	switch {
	case budget == 0:
		return ""
	case budget < 0:
		return shared.ReasoningEffort(off)
	case budget <= LowEffortMax:
		return shared.ReasoningEffortLow
	case budget <= MediumEffortMax:
		return shared.ReasoningEffortMedium
	}
	return shared.ReasoningEffortHigh
}

// withSchemaInstruction returns a copy of msgs whose system message (the
// first message, added when there is none) ends with the schema.
func withSchemaInstruction(msgs []provider.Message, s json.RawMessage) []provider.Message {
	instruction := jsonModeInstruction + string(s)
	if len(msgs) > 0 && msgs[0].Role == provider.RoleSystem {
		out := append([]provider.Message(nil), msgs...)
		out[0].Text += "\n\n" + instruction
		return out
	}
	return append([]provider.Message{{Role: provider.RoleSystem, Text: instruction}}, msgs...)
}
