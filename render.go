package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// renderText passes text messages through with their role.
func renderText(_ context.Context, b *Build, m *message.Message) error {
	b.Render(provider.Role(m.Role), m.Text)
	return nil
}

// text builds a rendered message.
type text struct{ strings.Builder }

func (t *text) Byte(c byte) { t.WriteByte(c) }

// JSON writes raw compact; invalid JSON as it is.
func (t *text) JSON(raw json.RawMessage) { t.WriteString(compact(raw)) }

// renderPlan shows the plan the calls of a previous step formed (012).
// planIntro introduces a plan the model made and runs.
const planIntro = "The plan so far; follow it unless the data shows it no longer fits:"

func renderPlan(_ context.Context, b *Build, m *message.Message) error {
	intro := planIntro
	mode, err := planMode(m)
	if err != nil {
		return err
	}
	if mode == PlanLazy { // as the loop reads it (lazyPlan)
		intro = "Lazy mode: only plan. Give the whole plan as calls, keeping branching output paths; nothing runs until it is approved. The plan so far:"
	}
	b.plan = planCalls(m.Plan)
	var t text
	t.WriteString("## Plan\n")
	switch {
	case b.rendering == RenderSnapshot:
		t.WriteString(intro)
		t.Byte('\n')
		if len(b.plan) == 0 {
			t.JSON(m.Plan)
			break
		}
		t.WriteString("[" + strings.Join(b.shownCalls(b.plan), ",") + "]")
	default:
		// Each step's calls become a plan message: the intro is said once
		// (and again when it changes), the calls a line each.
		if intro != b.planIntro {
			t.WriteString(intro)
			t.Byte('\n')
			b.planIntro = intro
		}
		t.WriteString(planLines(b.shownCalls(b.plan), m.Plan))
	}
	b.Render(provider.RoleUser, t.String())
	return nil
}

// shownCalls returns calls, each compact, as a plan shows them: without
// their _reasoningForCall, and without the _output of those whose
// outputs were rendered before. The reasoning is why the model made a
// call, written before it committed to it (002); said in the plan, it was
// in every later request of the run, a sentence or two a call (providers
// leave a model's thinking of earlier turns out alike). A latent call the model answered in
// the call itself (eager, 104) has its value written where _outputPath
// says, and the data block there shows it; said in the plan too, a long
// value (a summary, a draft) was in every later request twice. The calls
// rendered before decide it, so the plan renders the same at every step.
func (b *Build) shownCalls(calls []string) []string {
	out := make([]string, len(calls)) // b.plan stays as the model wrote it, for errors to find calls in
	for i, c := range calls {
		out[i] = shownCall(c, b.outputs[c])
	}
	return out
}

// shownCall returns call, compact, without its _reasoningForCall, and
// without its _output when output is true.
func shownCall(call string, output bool) string {
	if !strings.Contains(call, `"_reasoningForCall"`) && (!output || !strings.Contains(call, `"_output"`)) {
		return call
	}
	shown, _ := without(call, func(k string) bool { return k == `"_reasoningForCall"` || output && k == `"_output"` })
	return shown
}

// without returns call, a compact object, without the members whose
// quoted keys drop is true of, and the value of the last it left out;
// anything but an object as it is.
func without(call string, drop func(key string) bool) (string, []byte) {
	if !strings.HasPrefix(call, "{") {
		return call, nil
	}
	var t text
	var dropped []byte
	sep := byte('{')
	jsonfast.RawMembers([]byte(call), func(k, v []byte) bool {
		if drop(string(k)) {
			dropped = v
			return true
		}
		t.Byte(sep)
		t.Write(k)
		t.Byte(':')
		t.Write(v)
		sep = ','
		return true
	})
	if sep == '{' {
		t.Byte('{')
	}
	t.Byte('}')
	return t.String(), dropped
}

// planCalls returns the calls of a plan, each compact.
func planCalls(plan json.RawMessage) []string {
	var elems []json.RawMessage
	if json.Unmarshal(plan, &elems) != nil {
		return nil
	}
	calls := make([]string, len(elems))
	for i, e := range elems {
		calls[i] = compact(e)
	}
	return calls
}

// planLines writes the plan raw compactly, a call per line, from calls,
// its calls as planCalls returns them: what a run renders at every step,
// in fewer tokens than indented JSON. Anything else is compacted whole;
// invalid JSON stays as it is.
func planLines(calls []string, raw json.RawMessage) string {
	if len(calls) == 0 {
		return compact(raw)
	}
	var t text
	for i, c := range calls {
		t.Byte("[,"[min(i, 1)])
		t.WriteString(c)
		t.Byte('\n')
	}
	t.Byte(']')
	return t.String()
}

// compact is json.Compact; invalid JSON stays as it is.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// renderMeta shows the current identity and version and asks for the
// next one in the solution (016).
func renderMeta(_ context.Context, b *Build, m *message.Message) error {
	b.Render(provider.RoleUser, metaText(m))
	// The latest meta is the one a solution updates: its check replaces
	// the last meta message's.
	if b.metaCheck == 0 {
		b.Check(nil)
		b.metaCheck = len(b.solutionChecks)
	}
	b.solutionChecks[b.metaCheck-1] = checkMeta(m.Meta)
	s, partial := metaSchema(m.Meta)
	b.metaKeep = keepMeta(m.Meta, partial)
	b.Property("meta", s, true)
	return nil
}

// renderError feeds a failed call back to the model so it can correct it.
func renderError(_ context.Context, b *Build, m *message.Message) error {
	failures := b.failures
	if b.rendering == RenderSnapshot {
		failures = nil // data shows as it is now, where a later write may hide the error
	}
	b.Render(provider.RoleUser, errorText(m, b.plan, failures))
	return nil
}

// metaText is how the model sees a meta message.
func metaText(m *message.Message) string { return "## Meta\n" + compact(m.Meta) }

// planPlace returns the index of call in plan, when plan holds it once,
// else -1. A call of an instanced plan (ExecutePlanInstances) is the
// plan's call with an _instance added: it is found as that call, and the
// instance returned.
func planPlace(plan []string, call string) (int, string) {
	if i := slices.Index(plan, call); i >= 0 {
		if slices.Contains(plan[i+1:], call) {
			return -1, ""
		}
		return i, ""
	}
	if !strings.Contains(call, `"_instance"`) {
		return -1, ""
	}
	base, raw := without(call, func(k string) bool { return k == `"_instance"` })
	var instance string
	if json.Unmarshal(raw, &instance) != nil || instance == "" {
		return -1, ""
	}
	if i, _ := planPlace(plan, base); i >= 0 {
		return i, instance
	}
	return -1, ""
}

// errorText is how the model sees an error message, plan being the calls
// of the last plan shown before it. A failed call of that plan is named
// by its place in it (and its instance, see planPlace), as the plan shows
// it just above; another is written out, compact and without its
// reasoning, as the plan shows calls, since every later request repeats
// it (indented, a call with a list of two items took 16 lines, about a
// token each, and 274 bytes instead of 194). The error itself is
// left out when the call wrote it down its failure branch, which a data
// block above shows (failures holds the call and the error, joined by a
// NUL): an error can be long, and every later request would say it twice.
func errorText(m *message.Message, plan []string, failures map[string]bool) string {
	if m.Failed == nil {
		return "## Error\n" + m.Error
	}
	call := compact(m.Failed)
	if i, instance := planPlace(plan, call); i >= 0 {
		name, text := "", m.Error
		if tool := planTool(m.Failed); tool != "" {
			name = " (" + tool + ")"
			// The name said, "runtime error in send: …" says it again.
			if kind, rest, ok := strings.Cut(text, " error in "+tool+": "); ok && !strings.Contains(kind, " ") {
				text = kind + " error: " + rest
			}
		}
		if instance != "" {
			name += " failed for _instance " + instance
		} else {
			name += " failed"
		}
		if failures[call+"\x00"+m.Error] {
			return fmt.Sprintf("## Error\nCall %d of the plan above%s; its error went down the failure branch of its _outputPath.", i+1, name)
		}
		return fmt.Sprintf("## Error\nCall %d of the plan above%s: %s", i+1, name, text)
	}
	return fmt.Sprintf("## Error\nThe call %s failed: %s", shownCall(call, false), m.Error)
}
