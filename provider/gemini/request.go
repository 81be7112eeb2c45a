package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"

	"google.golang.org/genai"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/late"
	"github.com/augceo/agent/schema"
)

// call is one request to the API, built from a provider.Request.
type call struct {
	model    string
	contents []*genai.Content
	config   *genai.GenerateContentConfig
}

// newCall maps req onto the SDK's types. It only reads req.
func (p *Provider) newCall(req *provider.Request) (*call, error) {
	c := &call{model: req.Model, config: &genai.GenerateContentConfig{
		// One request per Generate: no resuming with continuation tokens
		// (which would also reconnect a stream that broke before its first
		// chunk, a retry that belongs to provider.Retry).
		AutomaticContinuation: genai.Ptr(false),
	}}
	if c.model == "" {
		c.model = p.model
	}
	if c.model == "" {
		return nil, ErrNoModel
	}
	// Implicit caching has no retention to ask for: provider.CacheLong
	// changes nothing.
	if err := req.CacheRetention.Check(); err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	var system *genai.Content
	for i, m := range req.Messages {
		var role string
		text := m.Text
		switch m.Role {
		case provider.RoleSystem:
			if len(c.contents) > 0 {
				// Late: in place, so the prefix already read stays (package late).
				role, text = genai.RoleUser, late.System(m.Text)
				break
			}
			if system == nil {
				system = &genai.Content{}
			}
			if m.Text != "" {
				system.Parts = append(system.Parts, &genai.Part{Text: m.Text})
			}
			continue
		case provider.RoleUser:
			role = genai.RoleUser
		case provider.RoleAssistant:
			role = genai.RoleModel
		default:
			return nil, fmt.Errorf("gemini: message %d: unknown role %q", i, m.Role)
		}
		if m.Text == "" {
			continue // an empty part is a 400 from the API
		}
		part := &genai.Part{Text: text}
		if n := len(c.contents); n > 0 && c.contents[n-1].Role == role {
			c.contents[n-1].Parts = append(c.contents[n-1].Parts, part)
			continue
		}
		c.contents = append(c.contents, &genai.Content{Role: role, Parts: []*genai.Part{part}})
	}
	if system != nil && len(system.Parts) > 0 {
		c.config.SystemInstruction = system
	}
	if req.N > 0 && !p.single {
		c.config.CandidateCount = clamp(req.N)
	}
	if req.MaxTokens > 0 {
		c.config.MaxOutputTokens = clamp(req.MaxTokens)
	}
	switch {
	case req.Thinking > 0:
		c.config.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: genai.Ptr(clamp(req.Thinking)), IncludeThoughts: true}
	case req.Thinking < 0:
		c.config.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: genai.Ptr(int32(0))}
	}
	// The SDK re-encodes its request through map[string]any, which sorts
	// object keys and widens float32 fields to float64 (0.7 would go out as
	// 0.699999988079071). Raw values are put in last, so the schema is sent
	// exactly as adapted, its properties in order, and the temperature as
	// given.
	raw := map[string]any{}
	if req.Temperature != nil {
		raw["temperature"] = *req.Temperature
	}
	if req.Schema != nil {
		field, s, err := responseSchema(req.Schema, p.openAPI)
		if err != nil {
			return nil, err
		}
		c.config.ResponseMIMEType = "application/json"
		raw[field] = s
	}
	if len(raw) > 0 {
		c.config.HTTPOptions = &genai.HTTPOptions{
			ExtrasRequestProvider: func(body map[string]any) map[string]any {
				gc, _ := body["generationConfig"].(map[string]any)
				if gc == nil {
					gc = map[string]any{}
					body["generationConfig"] = gc
				}
				maps.Copy(gc, raw)
				return body
			},
		}
	}
	return c, nil
}

// responseSchema returns the generationConfig field that carries the schema
// s and the schema to send in it: by default responseJsonSchema with s
// adapted to the JSON Schema subset that field documents
// (schema.GeminiJSON); with openAPI, responseSchema with s adapted to
// Gemini's OpenAPI subset, unless that subset cannot express s (recursion,
// a free-form object, a lone null type), as schema.ErrUnsupported advises.
func responseSchema(s json.RawMessage, openAPI bool) (string, json.RawMessage, error) {
	if openAPI {
		adapted, err := schema.Adapt(s, schema.Gemini)
		if err == nil {
			return "responseSchema", adapted, nil
		}
		if !errors.Is(err, schema.ErrUnsupported) && !errors.Is(err, schema.ErrRecursive) {
			return "", nil, fmt.Errorf("gemini: adapt schema: %w", err)
		}
	}
	adapted, err := schema.Adapt(s, schema.GeminiJSON)
	if err != nil {
		return "", nil, fmt.Errorf("gemini: adapt schema: %w", err)
	}
	return "responseJsonSchema", adapted, nil
}

// clamp converts n to the API's int32.
func clamp(n int) int32 {
	return int32(min(n, math.MaxInt32))
}
