package anthropic

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/late"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/schema"
)

// defaultToolName names the forced tool when Request.SchemaName is empty.
const defaultToolName = "solution"

// call is one Generate call translated for the API: the same request is sent
// once per solution.
type call struct {
	p *Provider
	// body is the request body, with "stream": true when sse.
	body []byte
	// params holds what the SDK's methods read of the request themselves:
	// the model and max_tokens (for the timeout of a plain request) and
	// thinking (for a deprecation warning). The SDK's OpenTelemetry span of
	// a plain call, which records only when the application installs a
	// tracer provider, sees these and not the rest. The body sent is body.
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
	// stagger holds the other requests of a call with N > 1 until the
	// first one's response begins (see fanOut).
	stagger bool
}

// minCachedBody is the size of a request body below which the API caches
// nothing: the shortest prefix it caches is 1,024 tokens, about 4 KB.
const minCachedBody = 4 << 10

// requestBody is the Messages request body. Its fields are in the order
// the SDK's params type has them; output_config and tools, which hold the
// adapted schema, are written by [requestBody.marshal].
type requestBody struct {
	MaxTokens   int64     `json:"max_tokens"`
	Messages    []message `json:"messages,omitzero"`
	Model       string    `json:"model,omitzero"`
	Temperature *float64  `json:"temperature,omitzero"`
	// output_config goes here
	System     []textBlock `json:"system,omitzero"`
	Thinking   *thinking   `json:"thinking,omitzero"`
	ToolChoice *toolChoice `json:"tool_choice,omitzero"`
	// tools goes here

	schema string        // the adapted schema
	tool   string        // in tool mode, the forced tool, whose input_schema is schema
	cache  *cacheControl // the forced tool's breakpoint
}

type message struct {
	Content []textBlock `json:"content"`
	Role    string      `json:"role"`
}

type textBlock struct {
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitzero"`
	Type         string        `json:"type"`
}

type cacheControl struct {
	TTL  string `json:"ttl,omitzero"`
	Type string `json:"type"`
}

// The cache_control the adapter sends: the API's default entry, which
// lasts five minutes, and, for provider.CacheLong, one that lasts an
// hour. A request marks every breakpoint alike: the API refuses a
// longer-lived one after a shorter-lived one.
var (
	ephemeral     = &cacheControl{Type: "ephemeral"}
	ephemeralHour = &cacheControl{TTL: "1h", Type: "ephemeral"}
)

// cacheControlOf returns the cache_control of a request with retention r.
func cacheControlOf(r provider.CacheRetention) (*cacheControl, error) {
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	if r == provider.CacheLong {
		return ephemeralHour, nil
	}
	return ephemeral, nil
}

type thinking struct {
	BudgetTokens int64  `json:"budget_tokens,omitzero"`
	Type         string `json:"type"`
}

type toolChoice struct {
	Name string `json:"name,omitzero"`
	Type string `json:"type"`
}

// newCall builds the request for req. It copies what it needs and never
// modifies req.
func (p *Provider) newCall(req *provider.Request) (*call, error) {
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: negative MaxTokens %d", req.MaxTokens)
	}
	c := &call{p: p, stream: req.Stream, sse: req.Stream, budget: limit.NewBudget("anthropic", p.maxBytes)}
	b := &requestBody{Model: cmp.Or(req.Model, p.model)}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	cc, err := cacheControlOf(req.CacheRetention)
	if err != nil {
		return nil, err
	}
	system, messages, err := convertMessages(req.Messages, cc)
	if err != nil {
		return nil, err
	}
	b.System, b.Messages, b.cache = system, messages, cc
	if req.Temperature != nil {
		t := *req.Temperature
		b.Temperature = &t
	}
	switch {
	case req.Thinking > 0:
		budget := max(MinThinkingBudget, req.Thinking)
		b.Thinking = &thinking{BudgetTokens: int64(budget), Type: "enabled"}
		c.params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(budget))
		maxTokens += budget // the API wants budget_tokens < max_tokens
	case req.Thinking < 0:
		b.Thinking = &thinking{Type: "disabled"}
		c.params.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	}
	b.MaxTokens = int64(maxTokens)
	c.params.Model, c.params.MaxTokens = sdk.Model(b.Model), b.MaxTokens
	if req.Schema != nil {
		adapted, over, err := schema.AdaptStrict(req.Schema, schema.Anthropic)
		if err != nil {
			return nil, fmt.Errorf("anthropic: adapt schema: %w", err)
		}
		b.schema = adapted
		// A schema over the limits of structured outputs (many tools
		// with optional parameters) goes as a forced tool, which is not
		// strict: the model is guided by it, and the answer is validated
		// locally.
		if p.toolOutput || over != nil {
			c.tool = cmp.Or(req.SchemaName, defaultToolName)
			b.tool = c.tool
			if req.Thinking > 0 {
				// The API refuses a forced tool with thinking on.
				b.ToolChoice = &toolChoice{Type: "auto"}
			} else {
				b.ToolChoice = &toolChoice{Name: c.tool, Type: "tool"}
			}
		}
	}
	if c.body, err = b.marshal(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	if !c.sse {
		if _, err := sdk.CalculateNonStreamingTimeout(maxTokens, c.params.Model, nil); err != nil {
			c.sse = true
		}
	}
	// Several requests of a prompt the cache would keep go one after the
	// other's start, which only a stream on the wire shows.
	if req.N > 1 && len(c.body) >= minCachedBody && (len(system) > 0 || c.tool != "" || slices.ContainsFunc(req.Messages, func(m provider.Message) bool { return m.Stable })) {
		c.stagger, c.sse = true, true
	}
	if c.sse { // at the end, where NewStreaming would add it
		c.body = append(c.body[:len(c.body)-1], `,"stream":true}`...)
	}
	return c, nil
}

// htmlEscape writes s to buf as json.HTMLEscape does, without copying s
// when it has nothing to escape, as a schema seldom has.
func htmlEscape(buf *bytes.Buffer, s string) {
	// ContainsAny takes its fast path only for ASCII sets.
	if !strings.ContainsAny(s, "<>&") && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029") {
		buf.WriteString(s)
		return
	}
	json.HTMLEscape(buf, []byte(s))
}

// marshal encodes b byte for byte as the SDK encodes its params
// (TestRequestBodySDK): with HTML escapes, and output_config and tools in
// their places. The adapted schema is copied as it is, so it keeps its
// property order, which is the order the model writes in; only
// json.HTMLEscape runs over it. schema.Adapt returns compact JSON, which
// as a json.RawMessage encoding/json would scan again, and for a composed
// schema of ten tools (5 KB and more) that scan cost as much as the rest
// of the request. In tool mode, the tool comes first in the cached prefix
// and has a breakpoint; see convertMessages for the others. It fails only
// for a temperature that is NaN or infinite.
func (b *requestBody) marshal() ([]byte, error) {
	n := len(b.schema) + 512 // the body's size, give or take the escapes
	for _, m := range b.Messages {
		for _, c := range m.Content {
			n += len(c.Text) + len(c.Text)/8 + 64
		}
	}
	for _, c := range b.System {
		n += len(c.Text) + len(c.Text)/8 + 64
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	// The fields before output_config, then those after it, as a second
	// object whose members join the first.
	head := *b
	head.System, head.Thinking, head.ToolChoice = nil, nil, nil
	if err := json.NewEncoder(buf).Encode(&head); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - len("}\n"))
	if b.schema != "" && b.tool == "" {
		buf.WriteString(`,"output_config":{"format":{"type":"json_schema","schema":`)
		htmlEscape(buf, b.schema)
		buf.WriteString(`}}`)
	}
	tail, err := json.Marshal(struct {
		System     []textBlock `json:"system,omitzero"`
		Thinking   *thinking   `json:"thinking,omitzero"`
		ToolChoice *toolChoice `json:"tool_choice,omitzero"`
	}{b.System, b.Thinking, b.ToolChoice})
	if err != nil {
		return nil, err
	}
	if len(tail) > len("{}") {
		buf.WriteByte(',')
		buf.Write(tail[1 : len(tail)-1])
	}
	if b.tool != "" {
		buf.WriteString(`,"tools":[{"input_schema":`)
		htmlEscape(buf, b.schema)
		name, _ := json.Marshal(b.tool) // a string always encodes
		buf.WriteString(`,"name":`)
		buf.Write(name)
		cache, err := json.Marshal(b.cache)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"cache_control":`)
		buf.Write(cache)
		buf.WriteString(`}]`)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// convertMessages splits off the system messages that start the
// conversation, which go to the system parameter in order; a later one
// stays in place as a user block (package late). It merges consecutive
// messages of one role into one message of several text blocks, as the
// API requires alternating roles. Each message becomes one text block.
//
// It also places cache_control breakpoints. The cached prefix is the
// tools, then the system parameter, then the messages, and a breakpoint
// caches everything before it. A request gets at most four, the API's
// limit: one on the forced tool in tool mode (set by newCall), one on the
// last system block, and one on the block of each of the last two messages
// marked Stable. The last caches this request's stable prefix. The one
// before is where the request before it, in a run, ended its own: the API
// finds an entry written at an earlier breakpoint only by looking back up
// to 20 blocks from a later one, and a step whose calls wrote more than
// that would otherwise miss the cache and write the whole conversation
// again.
//
// Each breakpoint gets cc.
func convertMessages(msgs []provider.Message, cc *cacheControl) ([]textBlock, []message, error) {
	last, before := -1, -1 // the indexes in msgs of the last two Stable messages
	for i, m := range msgs {
		if m.Stable {
			last, before = i, last
		}
	}
	var system []textBlock
	var out []message
	for i, m := range msgs {
		block := textBlock{Text: m.Text, Type: "text"}
		if i == last || i == before {
			block.CacheControl = cc
		}
		role := m.Role
		switch role {
		case provider.RoleSystem:
			if len(out) == 0 {
				system = append(system, block)
				continue
			}
			// Late: in place, so the prefix already read stays (package late).
			role, block.Text = provider.RoleUser, late.System(m.Text)
		case provider.RoleUser, provider.RoleAssistant:
		default:
			return nil, nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		if n := len(out); n > 0 && out[n-1].Role == string(role) {
			out[n-1].Content = append(out[n-1].Content, block)
			continue
		}
		out = append(out, message{Role: string(role), Content: []textBlock{block}})
	}
	if n := len(system); n > 0 {
		// A Stable system message's breakpoint is either this one or one
		// the messages do not have: at most four in all either way.
		system[n-1].CacheControl = cc
	}
	return system, out, nil
}
