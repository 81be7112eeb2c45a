package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
)

// Instancing (013): a template plan runs once per instance of the
// context's data, each copy reading and writing its own instance.

// ExecutePlanInstances runs plan as a global template (013) once per
// instance found in the context's data messages, in order of first
// appearance: each call is copied with its _instance set, so it reads
// that instance's data (falling back to global data) and writes only that
// instance. The copies run together, bounded by cfg.Concurrency as in
// ExecutePlan, and a call waits only for calls of its own instance. A
// template call that already has an _instance is an
// error; a context with no instance is ErrNoInstances. Problems of a
// *PlanError name the template call and the instance.
func ExecutePlanInstances(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) (*RunResult, error) {
	return Collect(PlanInstancesEvents(ctx, cfg, plan, context))
}

// PlanInstancesEvents is ExecutePlanInstances as a stream of events, as
// PlanEvents is for ExecutePlan.
func PlanInstancesEvents(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) iter.Seq2[RunEvent, error] {
	ids := InstanceIDs(context)
	if len(ids) == 0 {
		return func(yield func(RunEvent, error) bool) { yield(RunEvent{}, ErrNoInstances) }
	}
	bases, err := templateBases(plan)
	if err != nil {
		return func(yield func(RunEvent, error) bool) { yield(RunEvent{}, err) }
	}
	return planEvents(ctx, cfg, plan, &instancing{ids: ids, bases: bases}, context)
}

// ValidatePlanInstances is [ValidatePlan] for plan as a template run
// once per instance of the context, as [ExecutePlanInstances] runs it:
// each instance's copy of a call reads that instance's data, falling
// back to global data, and sees the outputs of its own instance's calls.
// Problems name the template call and the instances that have them. A
// template call that has an _instance is a *PlanError; a context with no
// instance is ErrNoInstances. Like ValidatePlan, it does not check what
// only running needs (ExecutePlanInstances checks that before any call
// runs): an activity for each explicit call, a provider for latent and
// delegate ones.
func ValidatePlanInstances(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) error {
	ids := InstanceIDs(context)
	if len(ids) == 0 {
		return ErrNoInstances
	}
	calls, err := InstancePlan(plan, ids)
	if err != nil {
		return err
	}
	return validatePlan(ctx, cfg, calls, len(plan), context)
}

// InstanceIDs returns the instances of the data messages of msgs, in
// order of first appearance.
func InstanceIDs(msgs []message.Message) []string {
	var ids []string
	seen := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		if m.Type == message.TypeData && m.Instance != "" && !seen[m.Instance] {
			seen[m.Instance] = true
			ids = append(ids, m.Instance)
		}
	}
	return ids
}

// InstancePlan expands a template plan: for each id, in order, a copy of
// every call with _instance set to it. A call that already has an
// _instance (other than null, which is none) is a *PlanError; a call that is not a JSON object is copied
// as it is, for validation to report.
func InstancePlan(plan []json.RawMessage, ids []string) ([]json.RawMessage, error) {
	bases, err := templateBases(plan)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(ids)*len(plan))
	for _, id := range ids {
		for i, raw := range plan {
			if bases[i] == nil {
				out = append(out, raw)
				continue
			}
			out = append(out, withInstance(nil, bases[i], id))
		}
	}
	return out, nil
}

// templateBases checks the calls of a template plan and returns each
// as a compact object, ready for [withInstance], or nil for a call that
// is not a JSON object. A call that already has an _instance is a
// *PlanError.
func templateBases(plan []json.RawMessage) ([]json.RawMessage, error) {
	var problems []PlanProblem
	bases := make([]json.RawMessage, len(plan))
	for i, raw := range plan {
		o, err := ojson.Parse(raw)
		if err != nil {
			continue
		}
		if string(o.Get("_instance")) == "null" { // none, as a strict model writes it
			o.Delete("_instance")
		}
		if inst := o.Get("_instance"); inst != nil {
			var s string
			_ = json.Unmarshal(inst, &s)
			problems = append(problems, PlanProblem{Call: i, Tool: planTool(raw), Instance: s,
				Err: fmt.Errorf("%w: a call of a template plan must not have an _instance", ErrInvalidCall)})
			continue
		}
		bases[i] = o.Bytes()
	}
	if problems != nil {
		return nil, &PlanError{Problems: problems}
	}
	return bases, nil
}

// withInstance appends to dst the compact object base with an _instance
// member set to id added last: what setting _instance on the parsed base
// with ojson writes.
func withInstance(dst, base json.RawMessage, id string) json.RawMessage {
	dst = append(dst, base[:len(base)-1]...)
	if len(base) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"_instance":`...)
	dst = append(dst, ojson.Quote(id)...)
	return append(dst, '}')
}

// instancing is a template plan run once per instance (013): the ids, in
// order, and the template's calls as [templateBases] returns them.
type instancing struct {
	ids   []string
	bases []json.RawMessage
}

// expand returns the calls of the template plan for every instance, the
// copies of instance k numbered from k*len(plan).
func (in *instancing) expand(plan []json.RawMessage) []json.RawMessage {
	calls := make([]json.RawMessage, 0, len(in.ids)*len(plan))
	for _, id := range in.ids {
		for i, raw := range plan {
			if in.bases[i] == nil {
				calls = append(calls, raw)
				continue
			}
			calls = append(calls, withInstance(nil, in.bases[i], id))
		}
	}
	return calls
}
