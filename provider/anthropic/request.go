package anthropic

import (
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/schema"
)

// defaultToolName names the forced tool when Request.SchemaName is empty.
const defaultToolName = "solution"

// call is one Generate call translated for the API: the same request is sent
// once per solution.
type call struct {
	p      *Provider
	params sdk.MessageNewParams
	// tool names the forced tool whose input is the solution, in tool mode;
	// empty when the solution is the text of the answer.
	tool string
	// stream yields chunks as they arrive; otherwise one per solution.
	stream bool
	// sse asks for an SSE stream on the wire. It is set for streamed calls,
	// and for the rest when the SDK would refuse a non-streamed request
	// because max_tokens makes it possibly longer than ten minutes.
	sse bool
	// budget counts the text of every solution against the cap.
	budget *limit.Budget
}

// newCall builds the request parameters for req. It copies what it needs
// and never modifies req.
func (p *Provider) newCall(req *provider.Request) (*call, error) {
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: negative MaxTokens %d", req.MaxTokens)
	}
	c := &call{p: p, stream: req.Stream, sse: req.Stream, budget: limit.NewBudget("anthropic", p.maxBytes)}
	params := &c.params
	params.Model = req.Model
	if params.Model == "" {
		params.Model = p.model
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	system, messages, err := convertMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	params.System, params.Messages = system, messages
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	switch {
	case req.Thinking > 0:
		budget := max(MinThinkingBudget, req.Thinking)
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(budget))
		maxTokens += budget // the API wants budget_tokens < max_tokens
	case req.Thinking < 0:
		params.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	}
	params.MaxTokens = int64(maxTokens)
	if req.Schema != nil {
		adapted, err := schema.Adapt(req.Schema, schema.Anthropic)
		if err != nil {
			return nil, fmt.Errorf("anthropic: adapt schema: %w", err)
		}
		if p.toolOutput {
			c.tool = req.SchemaName
			if c.tool == "" {
				c.tool = defaultToolName
			}
			params.Tools = []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{
				Name: c.tool,
				// The raw schema keeps its property order, which a map
				// would lose; the order is the one the model writes in.
				InputSchema: param.Override[sdk.ToolInputSchemaParam](adapted),
				// The tools come first in the cached prefix; see
				// convertMessages for the other breakpoints.
				CacheControl: sdk.NewCacheControlEphemeralParam(),
			}}}
			if req.Thinking > 0 {
				// The API refuses a forced tool with thinking on.
				params.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
			} else {
				params.ToolChoice = sdk.ToolChoiceParamOfTool(c.tool)
			}
		} else {
			format := append([]byte(`{"type":"json_schema","schema":`), adapted...)
			format = append(format, '}')
			params.OutputConfig.Format = param.Override[sdk.JSONOutputFormatParam](json.RawMessage(format))
		}
	}
	if !c.sse {
		if _, err := sdk.CalculateNonStreamingTimeout(maxTokens, params.Model, nil); err != nil {
			c.sse = true
		}
	}
	return c, nil
}

// convertMessages splits off the system messages, which go to the system
// parameter in order, and merges consecutive messages of one role into one
// message of several text blocks, as the API requires alternating roles.
// Each message becomes one text block.
//
// It also places cache_control breakpoints. The cached prefix is the
// tools, then the system parameter, then the messages, and a breakpoint
// caches everything before it. A request gets at most three, below the
// API's limit of four: one on the forced tool in tool mode (set by
// newCall), one on the last system block, and one on the block of the last
// message marked Stable. Earlier Stable messages get none: the API finds
// an entry written at an earlier breakpoint from a later one (looking back
// up to 20 blocks), so one at the end of the stable prefix is enough.
func convertMessages(msgs []provider.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	stable := -1 // the index in msgs of the last Stable message
	for i, m := range msgs {
		if m.Stable {
			stable = i
		}
	}
	var system []sdk.TextBlockParam
	var out []sdk.MessageParam
	for i, m := range msgs {
		var role sdk.MessageParamRole
		switch m.Role {
		case provider.RoleSystem:
			block := sdk.TextBlockParam{Text: m.Text}
			if i == stable {
				block.CacheControl = sdk.NewCacheControlEphemeralParam()
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
		block := sdk.NewTextBlock(m.Text)
		if i == stable {
			block.OfText.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, block)
			continue
		}
		out = append(out, sdk.MessageParam{Role: role, Content: []sdk.ContentBlockParamUnion{block}})
	}
	if n := len(system); n > 0 {
		// When the last Stable message is a system message, it has the
		// breakpoint already or this one is a second in the system and the
		// messages have none: at most three in all either way.
		system[n-1].CacheControl = sdk.NewCacheControlEphemeralParam()
	}
	return system, out, nil
}
