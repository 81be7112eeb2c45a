package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/late"
	"github.com/augceo/agent/schema"
)

// The adapter writes its request body itself (requestBody.marshal); it
// used to fill the SDK's params type and have the SDK encode it. The tests
// here hold the new body to the SDK's, byte for byte.

// sdkParams is how the adapter built its request before: the SDK's params.
func sdkParams(p *Provider, req *provider.Request) (sdk.MessageNewParams, error) {
	var params sdk.MessageNewParams
	params.Model = req.Model
	if params.Model == "" {
		params.Model = p.model
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	cc := sdk.NewCacheControlEphemeralParam()
	if req.CacheRetention == provider.CacheLong {
		cc.TTL = sdk.CacheControlEphemeralTTLTTL1h
	}
	system, messages, err := sdkMessages(req.Messages, cc)
	if err != nil {
		return params, err
	}
	params.System, params.Messages = system, messages
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	switch {
	case req.Thinking > 0:
		budget := max(MinThinkingBudget, req.Thinking)
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(budget))
		maxTokens += budget
	case req.Thinking < 0:
		params.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	}
	params.MaxTokens = int64(maxTokens)
	if req.Schema != nil {
		adapted, err := schema.Adapt(req.Schema, schema.Anthropic)
		if err != nil {
			return params, fmt.Errorf("anthropic: adapt schema: %w", err)
		}
		if p.toolOutput {
			tool := req.SchemaName
			if tool == "" {
				tool = defaultToolName
			}
			params.Tools = []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{
				Name:         tool,
				InputSchema:  param.Override[sdk.ToolInputSchemaParam](adapted),
				CacheControl: cc,
			}}}
			if req.Thinking > 0 {
				params.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
			} else {
				params.ToolChoice = sdk.ToolChoiceParamOfTool(tool)
			}
		} else {
			format := append([]byte(`{"type":"json_schema","schema":`), adapted...)
			format = append(format, '}')
			params.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](json.RawMessage(format))
		}
	}
	return params, nil
}

// sdkMessages is what convertMessages did with the SDK's types.
func sdkMessages(msgs []provider.Message, cc sdk.CacheControlEphemeralParam) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	last, before := -1, -1
	for i, m := range msgs {
		if m.Stable {
			last, before = i, last
		}
	}
	stable := func(i int) bool { return i == last || i == before }
	var system []sdk.TextBlockParam
	var out []sdk.MessageParam
	for i, m := range msgs {
		var role sdk.MessageParamRole
		text := m.Text
		switch m.Role {
		case provider.RoleSystem:
			if len(out) > 0 { // after the conversation began: in place
				role, text = sdk.MessageParamRoleUser, late.System(m.Text)
				break
			}
			block := sdk.TextBlockParam{Text: m.Text}
			if stable(i) {
				block.CacheControl = cc
			}
			system = append(system, block)
			continue
		case provider.RoleUser:
			role = sdk.MessageParamRoleUser
		case provider.RoleAssistant:
			role = sdk.MessageParamRoleAssistant
		default:
			return nil, nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		block := sdk.NewTextBlock(text)
		if stable(i) {
			block.OfText.CacheControl = cc
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, block)
			continue
		}
		out = append(out, sdk.MessageParam{Role: role, Content: []sdk.ContentBlockParamUnion{block}})
	}
	if n := len(system); n > 0 {
		system[n-1].CacheControl = cc
	}
	return system, out, nil
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
func bodies(t *testing.T, cfg Config, req *provider.Request) (sdkBody, ours []byte) {
	t.Helper()
	tr := &bodyTransport{}
	cfg.APIKey, cfg.BaseURL, cfg.HTTPClient = testKey, "http://anthropic.test", &http.Client{Transport: tr}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	params, sdkErr := sdkParams(p, req)
	c, err := p.newCall(req)
	if sdkErr == nil && err == nil {
		if c.sse {
			p.client.Messages.NewStreaming(ctx, params).Close()
		} else {
			p.client.Messages.New(ctx, params)
		}
		sdkBody, tr.body = tr.body, nil
	}
	for _, err := range p.Generate(ctx, req) {
		if sdkErr != nil && (err == nil || err.Error() != sdkErr.Error()) {
			t.Errorf("Generate failed with %v, want %v", err, sdkErr)
		}
	}
	return sdkBody, tr.body
}

func TestRequestBodySDK(t *testing.T) {
	html := json.RawMessage(`{"type":"object","description":"a<b && c>d \u2028 é","properties":{"output":{"type":"string","description":"<tag>"}},"required":["output"]}`)
	schema := json.RawMessage(`{"type":"object","properties":{"output":{"type":["object","null"],"properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"required":["zeta"]}},"required":["output"]}`)
	msgs := []provider.Message{
		{Role: provider.RoleSystem, Text: "You are terse.", Stable: true},
		{Role: provider.RoleUser, Text: "What is <b>the</b> capital & of France? \u2028 \x00 \xff é 😀"},
		{Role: provider.RoleUser, Text: "Answer."},
		{Role: provider.RoleAssistant, Text: `{"output":null}`, Stable: true},
		{Role: provider.RoleSystem, Text: "Tools changed."},
		{Role: provider.RoleUser, Text: ""},
	}
	temp := 0.2
	for _, tt := range []struct {
		name   string
		cfg    Config
		req    provider.Request
		unsent bool // nothing is sent
	}{
		{name: "structured", req: provider.Request{Messages: msgs, Schema: schema, Temperature: &temp, Stream: true}},
		{name: "plain", cfg: Config{Model: "claude-haiku-4-5", MaxTokens: 1000}, req: provider.Request{Messages: msgs[1:3], Schema: schema}},
		{name: "escapes in the schema", req: provider.Request{Messages: msgs, Schema: html, Stream: true}},
		{name: "tool", cfg: Config{ToolOutput: true}, req: provider.Request{Messages: msgs, Schema: html, SchemaName: "a<b>", Stream: true}},
		{name: "tool, thinking", cfg: Config{ToolOutput: true}, req: provider.Request{Messages: msgs, Schema: schema, Thinking: 2000, Stream: true}},
		{name: "thinking off", req: provider.Request{Messages: msgs, Thinking: -1, Temperature: ptr(0.0), Stream: true}},
		{name: "long cache", req: provider.Request{Messages: msgs, Schema: schema, Stream: true, CacheRetention: provider.CacheLong}},
		{name: "tool, long cache", cfg: Config{ToolOutput: true}, req: provider.Request{Messages: msgs, Schema: html, Stream: true, CacheRetention: provider.CacheLong}},
		{name: "unknown cache retention", req: provider.Request{Messages: msgs, CacheRetention: "forever"}, unsent: true},
		{name: "free text", req: provider.Request{Messages: msgs[1:2], Model: "m<&>", Stream: true}},
		{name: "no messages", req: provider.Request{Stream: true}},
		{name: "temperature NaN", req: provider.Request{Messages: msgs, Temperature: ptr(math.NaN())}, unsent: true},
		{name: "unknown role", req: provider.Request{Messages: []provider.Message{{Role: "tool"}}}, unsent: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sdkBody, ours := bodies(t, tt.cfg, &tt.req)
			if !bytes.Equal(ours, sdkBody) {
				t.Errorf("body\n%s\nwant the SDK's\n%s", ours, sdkBody)
			}
			if (ours == nil) != tt.unsent {
				t.Errorf("body %q, want one sent: %v", ours, !tt.unsent)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func FuzzRequestBody(f *testing.F) {
	f.Add("You are terse.", "Capital of France?", `{"output":null}`, "", 0.2, 0, 0, false, uint8(0))
	f.Add("<b>&</b>\u2028", "\xff", "", "a<b>", 1.0, 1000, 5000, true, uint8(1))
	f.Add("", "x", "y", "", math.Copysign(0, -1), 500, -1, true, uint8(6))
	f.Fuzz(func(t *testing.T, system, user, assistant, name string, temperature float64,
		maxTokens, thinking int, stream bool, flags uint8) {
		if maxTokens < 0 || maxTokens > 1<<20 || thinking > 1<<20 {
			t.Skip()
		}
		cfg := Config{ToolOutput: flags&1 != 0}
		req := &provider.Request{
			Messages: []provider.Message{
				{Role: provider.RoleSystem, Text: system, Stable: flags&2 != 0},
				{Role: provider.RoleUser, Text: user},
				{Role: provider.RoleAssistant, Text: assistant, Stable: flags&4 != 0},
				{Role: provider.RoleUser, Text: user},
			},
			SchemaName: name, MaxTokens: maxTokens, Thinking: thinking, Stream: stream,
		}
		if flags&8 == 0 {
			req.Schema = json.RawMessage(`{"type":"object","description":"` + name + `","properties":{"output":{"type":"string"}}}`)
			if !json.Valid(req.Schema) {
				req.Schema = json.RawMessage(`{"type":"object"}`)
			}
		}
		if flags&16 == 0 {
			req.Temperature = &temperature
		}
		if flags&32 != 0 {
			req.Messages = req.Messages[1:]
		}
		sdkBody, ours := bodies(t, cfg, req)
		if !bytes.Equal(ours, sdkBody) {
			t.Errorf("body\n%s\nwant the SDK's\n%s", ours, sdkBody)
		}
	})
}
