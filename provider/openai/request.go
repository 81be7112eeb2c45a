package openai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
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

// params maps req onto the Chat Completions request body. It copies what
// it needs and never modifies req.
func (p *Provider) params(req *provider.Request) (openai.ChatCompletionNewParams, error) {
	var params openai.ChatCompletionNewParams
	params.Model = firstNonEmpty(req.Model, p.cfg.Model)
	if params.Model == "" {
		return params, fmt.Errorf("%w: set Request.Model or Config.Model", ErrNoModel)
	}
	msgs := req.Messages
	if req.Schema != nil {
		if p.cfg.JSONMode {
			msgs = withSchemaInstruction(msgs, req.Schema)
			params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		} else {
			adapted, err := schema.Adapt(req.Schema, schema.OpenAI)
			if err != nil {
				return params, fmt.Errorf("%s: adapt schema: %w", p.cfg.Name, err)
			}
			params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   firstNonEmpty(req.SchemaName, DefaultSchemaName),
					Schema: adapted,
					Strict: openai.Bool(true),
				},
			}
		}
	}
	params.Messages = make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case provider.RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Text))
		case provider.RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case provider.RoleAssistant:
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Text))
		default:
			return params, fmt.Errorf("%w %q in message %d", ErrUnknownRole, m.Role, i)
		}
	}
	if req.N > 1 {
		params.N = openai.Int(int64(req.N))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if p.cfg.LegacyMaxTokens {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	params.ReasoningEffort = effort(req.Thinking, p.cfg.ThinkingOff)
	if req.Stream {
		params.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	if req.CacheKey != "" && !p.cfg.NoPromptCacheKey {
		// Routes the requests that share a prefix to the same cache.
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	return params, nil
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
