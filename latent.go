package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// latent produces a call's result with the model: the value the model
// already wrote in the call's _output (eager), or a Request whose schema
// is the tool's _output.
func (x *executor) latent(ctx context.Context, c *Call) (*Result, *Response, error) {
	var inline struct {
		Output json.RawMessage `json:"_output"`
	}
	_ = json.Unmarshal(c.Params, &inline)
	var answer json.RawMessage // a consultation's: the entry of the advisor it asks (017)
	var role string            // a consultation's: the role of the advisor it asks
	if c.Tool == ConsultAdvisor {
		var id string
		id, answer = x.build.consultation(c.Args())
		role = x.build.consultRole(id)
		if got, ok := answeredAs(inline.Output); ok && answer != nil && got != id {
			return nil, nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("the call asks advisor %q, and its _output is the entry of %q", id, got)}
		}
	}
	if inline.Output != nil && string(inline.Output) != "null" { // null: what a strict provider writes for none
		return &Result{Value: inline.Output}, nil, nil
	}
	description, out := c.toolResult()
	if answer != nil {
		out = answer
	}
	if out == nil {
		out = json.RawMessage(`{}`)
	}
	task := "Carry out the tool " + c.Tool + " for the input below and give its result as output."
	if description != "" {
		task += "\nThe tool: " + description
	}
	if role != "" {
		task += "\n" + role
	}
	ctxMsgs := []message.Message{{Type: message.TypeText, Role: message.RoleSystem, Text: task}}
	if len(c.scoped) > 0 {
		// Scopes focus a latent call (015): the scoped data comes first,
		// marked as what to attend to.
		scoped, err := uninstanced(c)
		if err != nil {
			return nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: errorf("latent execution: scopes: %w", err)}
		}
		ctxMsgs = append(ctxMsgs, message.Text("Focus on the data below; it is what this call is about."))
		ctxMsgs = append(ctxMsgs, scoped...)
	}
	ctxMsgs = append(ctxMsgs, message.Message{Type: message.TypeData, Kind: message.KindInput, Data: c.Args()})
	cfg := *x.cfg
	cfg.CallbackPath, cfg.N = "", 1
	if cfg.CacheKey != "" {
		// Its requests share a prefix with each other, not with the run's.
		cfg.CacheKey += "/" + c.Tool
	}
	resp, err := Request(ctx, cfg, out, ctxMsgs)
	if u := UsageOf(err); resp == nil && u != (provider.Usage{}) {
		resp = &Response{Usage: u} // the run counts what a failed request used
	}
	if err != nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: errorf("latent execution: %w", err)}
	}
	sol := resp.Solutions[0]
	if sol.Output == nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: errors.New("latent execution gave no output")}
	}
	return &Result{Value: sol.Output}, resp, nil
}
