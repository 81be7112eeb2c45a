package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
)

// The adapter writes its request body itself (requestBody.marshal); it
// used to fill the SDK's params type and have the SDK encode it. The tests
// here hold the new body to the SDK's, byte for byte.

// sdkParams is how the adapter built its request before: the SDK's params.
func sdkParams(p *Provider, req *provider.Request) (openai.ChatCompletionNewParams, error) {
	var params openai.ChatCompletionNewParams
	params.Model = firstNonEmpty(req.Model, p.cfg.Model)
	if params.Model == "" {
		return params, fmt.Errorf("%w: set Request.Model or Config.Model", ErrNoModel)
	}
	if err := req.CacheRetention.Check(); err != nil {
		return params, fmt.Errorf("%s: %w", p.cfg.Name, err)
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

// bodyTransport records the body of each request, and fails it.
type bodyTransport struct{ body []byte }

func (t *bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.body, _ = io.ReadAll(r.Body)
	r.Body.Close()
	return nil, errors.New("not sent")
}

// bodies returns the body the SDK sends for req, from sdkParams, and the
// one Generate sends; nil when none is sent.
func bodies(t *testing.T, cfg Config, req *provider.Request) (sdk, ours []byte) {
	t.Helper()
	tr := &bodyTransport{}
	cfg.APIKey, cfg.BaseURL, cfg.HTTPClient = "sk-test", "http://openai.test/v1", &http.Client{Transport: tr}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	params, sdkErr := sdkParams(p, req)
	if sdkErr == nil {
		if req.Stream {
			p.client.Chat.Completions.NewStreaming(ctx, params).Close()
		} else {
			p.client.Chat.Completions.New(ctx, params)
		}
		sdk, tr.body = tr.body, nil
	}
	for _, err := range p.Generate(ctx, req) {
		if sdkErr != nil && (err == nil || err.Error() != sdkErr.Error()) {
			t.Errorf("Generate failed with %v, want %v", err, sdkErr)
		}
	}
	return sdk, tr.body
}

func TestRequestBodySDK(t *testing.T) {
	html := `{"type":"object","description":"a<b && c>d \u2028","properties":{"output":{"type":"string","description":"<tag> & é"}},"required":["output"]}`
	for _, tt := range []struct {
		name   string
		cfg    Config
		req    provider.Request
		unsent bool // nothing is sent
	}{
		{name: "plain", cfg: Config{Model: "gpt-5-mini"}, req: provider.Request{Messages: conversation(), Schema: []byte(testSchema)}},
		{name: "streamed", cfg: Config{Model: "gpt-5-mini"}, req: provider.Request{
			Model: "gpt-4o", Messages: conversation(), Schema: []byte(testSchema), SchemaName: "answer",
			N: 3, Stream: true, Temperature: ptr(0.2), MaxTokens: 1000, CacheKey: "run-1"}},
		{name: "temperature 0", cfg: Config{Model: "m"}, req: provider.Request{Messages: conversation(), Temperature: ptr(0.0)}},
		{name: "temperature 1e-7", cfg: Config{Model: "m"}, req: provider.Request{Messages: conversation(), Temperature: ptr(1e-7)}},
		{name: "temperature NaN", cfg: Config{Model: "m"}, req: provider.Request{Messages: conversation(), Temperature: ptr(math.NaN())}, unsent: true},
		{name: "thinking", cfg: Config{Model: "o4-mini"}, req: provider.Request{Messages: conversation(), Thinking: 5000, Stream: true}},
		{name: "thinking off", cfg: Config{Model: "m", ThinkingOff: "none"}, req: provider.Request{Messages: conversation(), Thinking: -1}},
		{name: "JSON mode", cfg: Config{Model: "llama3.1", JSONMode: true, LegacyMaxTokens: true},
			req: provider.Request{Messages: conversation(), Schema: []byte(testSchema), MaxTokens: 500, Stream: true}},
		{name: "JSON mode, no system", cfg: Config{Model: "m", JSONMode: true}, req: provider.Request{Messages: conversation()[1:], Schema: []byte(html)}},
		// Nothing goes out for a long retention (see Provider.request).
		{name: "long cache", cfg: Config{Model: "gpt-5-mini"}, req: provider.Request{Messages: conversation(), CacheKey: "k", CacheRetention: provider.CacheLong}},
		{name: "unknown cache retention", cfg: Config{Model: "m"}, req: provider.Request{Messages: conversation(), CacheRetention: "1d"}, unsent: true},
		{name: "NoPromptCacheKey", cfg: Config{Model: "m", NoPromptCacheKey: true}, req: provider.Request{Messages: conversation(), CacheKey: "k"}},
		{name: "escapes", cfg: Config{Model: "m<&>"}, req: provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: "<b>&amp;</b> \u2028\u2029 \x7f \x00 \t\"\\ é 😀 \xff\xfe"},
				{Role: provider.RoleUser, Text: ""},
				{Role: provider.RoleAssistant, Text: ""},
			},
			Schema: []byte(html), SchemaName: "a<b>", CacheKey: "<&>"}},
		{name: "no messages", cfg: Config{Model: "m"}, req: provider.Request{Stream: true}},
		{name: "unknown role", cfg: Config{Model: "m"}, req: provider.Request{Messages: []provider.Message{{Role: "tool", Text: "x"}}}, unsent: true},
		{name: "no model", req: provider.Request{Messages: conversation()}, unsent: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sdk, ours := bodies(t, tt.cfg, &tt.req)
			if !bytes.Equal(ours, sdk) {
				t.Errorf("body\n%s\nwant the SDK's\n%s", ours, sdk)
			}
			if (ours == nil) != tt.unsent {
				t.Errorf("body %q, want one sent: %v", ours, !tt.unsent)
			}
		})
	}
}

func FuzzRequestBody(f *testing.F) {
	f.Add("You are terse.", "Capital of France?", `{"output":null}`, "", "", 0.2, 1, 0, 0, false, uint8(0))
	f.Add("<b>&</b>\u2028", "\xff", "", "answer", "run-1", 1.0, 3, 1000, 5000, true, uint8(1))
	f.Add("", "x", "y", "a<b", "k", math.Copysign(0, -1), 0, 500, -1, true, uint8(2))
	f.Fuzz(func(t *testing.T, system, user, assistant, name, cacheKey string, temperature float64,
		n, maxTokens, thinking int, stream bool, flags uint8) {
		cfg := Config{Model: "gpt-test", JSONMode: flags&1 != 0, LegacyMaxTokens: flags&2 != 0, NoPromptCacheKey: flags&4 != 0}
		req := &provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: system},
				{Role: provider.RoleUser, Text: user},
				{Role: provider.RoleAssistant, Text: assistant},
			},
			SchemaName: name, CacheKey: cacheKey, N: n, MaxTokens: maxTokens, Thinking: thinking, Stream: stream,
		}
		if flags&8 == 0 {
			req.Schema = []byte(testSchema)
		}
		if flags&16 == 0 {
			req.Temperature = &temperature
		}
		if flags&32 != 0 {
			req.Messages = req.Messages[1:]
		}
		sdk, ours := bodies(t, cfg, req)
		if !bytes.Equal(ours, sdk) {
			t.Errorf("body\n%s\nwant the SDK's\n%s", ours, sdk)
		}
	})
}
