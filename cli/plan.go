package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/message"
)

var planCommand = &command{
	name:     "plan",
	synopsis: []string{"plan validate [--structure] [--input JSON|@FILE] FILE", "plan graph FILE"},
	summary:  "check a plan before it runs, or draw it as a Mermaid graph",
	doc: `
FILE ("-" for standard input) holds an array of calls, an object
{"plan": [...], "context": [...]}, or an Idea ({schema, context}) whose
last plan message is the plan. validate prints "ok: N calls", or lists
every problem (unknown tools, cycles, references nothing can satisfy) and
exits 1; with no context in the file and no --input, or with --structure,
only what the plan says on its own is checked (no tools, no context);
otherwise an Idea's MCP servers run for the check, as for acts run.
--input adds inputs to the context as acts run does; when the context
has instanced data, the plan is checked once per instance, as acts run
runs it, and validate prints "ok: N calls, M instances". graph prints
the plan as a Mermaid flowchart.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		structure := fs.Bool("structure", false, "validate: check the plan alone, without tools or context")
		input := fs.String("input", "", "validate: the inputs, as acts run takes them: `JSON` or @FILE, @- for standard input (arrays and JSON lines are instanced)")
		return func(ctx context.Context, env *Env, pos []string) error {
			return planCmd(ctx, env, pos, *structure, *input)
		}
	},
}

// planCmd checks a plan or draws it (012):
//
//	acts plan validate [--structure] [--input JSON|@FILE] FILE
//	acts plan graph FILE
func planCmd(ctx context.Context, env *Env, pos []string, structure bool, input string) error {
	stdout := env.Stdout
	if len(pos) != 2 || (pos[0] != "validate" && pos[0] != "graph") {
		return fmt.Errorf("%w: plan takes validate or graph, and FILE", errUsage)
	}
	file := pos[1]
	switch {
	case input == "":
	case pos[0] != "validate":
		return fmt.Errorf("%w: --input is for plan validate", errUsage)
	case structure:
		return fmt.Errorf("%w: --input and --structure: the plan alone reads no input", errUsage)
	}
	data, inputs, err := readWithInput(env, "FILE", file, input)
	if err != nil {
		return err
	}
	plan, msgs, servers, hasContext, err := readPlan(env.Registry, data, !structure)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if input != "" {
		msgs, hasContext = append(msgs, inputs...), true
	}
	if pos[0] == "graph" {
		g, err := agent.PlanGraph(plan)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		_, err = fmt.Fprint(stdout, escapeText(g))
		return err
	}
	if !structure && hasContext {
		// The Idea's MCP servers, as acts run connects them: their tools
		// are known to the plan, and offered ahead of the context.
		tools, closeMCP, err := connectMCP(ctx, env, file, servers)
		if err != nil {
			return err
		}
		defer closeMCP()
		if msgs, err = offerMCP(env.Registry, tools, msgs); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	only := ""
	// The program's registry, as acts run has it: tools offered by name.
	cfg := agent.Config{Registry: env.Registry}
	switch ids := agent.InstanceIDs(msgs); {
	case structure || !hasContext:
		err = agent.CheckPlan(plan)
		only = " (structure only)"
	case len(ids) > 0 && !instanced(plan):
		// A template run once per instance, as acts run runs it.
		err = agent.ValidatePlanInstances(ctx, cfg, plan, msgs)
		only = ", " + count(len(ids), "instance")
	default:
		err = agent.ValidatePlan(ctx, cfg, plan, msgs)
	}
	if pe, ok := errors.AsType[*agent.PlanError](err); ok {
		for _, p := range pe.Problems {
			fmt.Fprintln(stdout, escapeText(fmt.Sprint(p)))
		}
		return fmt.Errorf("%s: invalid plan (%s)", file, count(len(pe.Problems), "problem"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	_, err = fmt.Fprintf(stdout, "ok: %s%s\n", count(len(plan), "call"), only)
	return err
}

// errNotPlanFile says what a plan file holds.
var errNotPlanFile = errors.New(`a plan file holds an array of calls, {"plan": [...], "context": [...]}, or an Idea with a plan message`)

// readPlan reads a plan file: an array of calls, {plan, context}, or an
// Idea whose context holds a plan message. hasContext reports whether the
// file gives a context to validate against; with expand, its presets are
// expanded, as acts run expands them, from the Idea's and reg's (the
// plan's structure alone needs none). servers are the Idea's MCP servers.
func readPlan(reg *agent.Registry, data []byte, expand bool) (plan []json.RawMessage, msgs []message.Message, servers []agent.MCPServer, hasContext bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &plan); err != nil {
			return nil, nil, nil, false, fmt.Errorf("plan: %w", jsonfast.WithPosition(data, err))
		}
		for i, c := range plan {
			// A context file (acts resolve takes one) is an array too:
			// say so, rather than call each message a call with no _tool.
			var m struct {
				Type *string         `json:"type"`
				Tool json.RawMessage `json:"_tool"`
			}
			if json.Unmarshal(c, &m) == nil && m.Type != nil && m.Tool == nil {
				return nil, nil, nil, false, fmt.Errorf("plan: element %d is a message (its \"type\" is %q), not a call; %w", i, *m.Type, errNotPlanFile)
			}
		}
		return plan, nil, nil, false, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); errors.As(err, new(*json.SyntaxError)) {
		return nil, nil, nil, false, jsonfast.WithPosition(data, err)
	} else if err != nil || top == nil {
		return nil, nil, nil, false, errNotPlanFile
	}
	if raw, ok := top["plan"]; ok {
		if err := json.Unmarshal(raw, &plan); err != nil {
			return nil, nil, nil, false, fmt.Errorf(`field "plan" must be an array of calls: %w`, err)
		}
		raw, ok := top["context"]
		if !ok {
			return plan, nil, nil, false, nil
		}
		msgs, err := message.ParseContext(raw)
		if err != nil {
			return nil, nil, nil, false, fmt.Errorf("context: %w", err)
		}
		if !expand {
			return plan, msgs, nil, true, nil
		}
		if msgs, err = agent.ExpandPresets(reg, nil, msgs); err != nil {
			return nil, nil, nil, false, fmt.Errorf("context: %w", err)
		}
		return plan, msgs, nil, true, nil
	}
	idea, err := agent.ParseIdea(data)
	if err != nil {
		return nil, nil, nil, false, err
	}
	msgs = idea.Context
	if expand {
		if msgs, err = agent.ExpandPresets(reg, idea.Presets, idea.Context); err != nil {
			return nil, nil, nil, false, err
		}
	}
	plan, _, ok := agent.LastPlan(msgs)
	switch {
	case !ok && !expand:
		return nil, nil, nil, false, errors.New("the idea's context has no plan message (a preset's plan is found without --structure)")
	case !ok:
		return nil, nil, nil, false, errors.New("the idea's context has no plan message")
	}
	return plan, msgs, idea.MCP, true, nil
}
