package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/schema"
)

// PlanError reports an invalid plan: every problem found, in plan order.
type PlanError struct {
	Problems []PlanProblem
}

func (e *PlanError) Error() string {
	var b strings.Builder
	b.WriteString("agent: invalid plan: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so errors.Is and errors.As see through the
// PlanError to the sentinel of each.
func (e *PlanError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// PlanProblem is one problem of a plan, located by the call and, where it
// concerns one, the parameter and the reference.
type PlanProblem struct {
	Call     int    // index of the call in the plan
	Tool     string // its _tool, "" if it has none
	Instance string // its _instance, if any
	Param    string // JSON pointer of the parameter, "/_outputPath" for the output path; "" for the whole call
	Ref      string // the reference or expression concerned, if any
	Err      error  // ErrCycle (as a *CycleError), ErrUnsatisfiable, ErrInvalidCall, ErrUnknownTool, ErrNoProvider, a *ref.Error, ...
}

// Error returns "call 1 (confirmOrder) param /receipt ref †state.receipt: …".
// The reference is left out where Err already quotes it.
func (p PlanProblem) Error() string {
	var b strings.Builder
	b.WriteString("call ")
	b.WriteString(strconv.Itoa(p.Call))
	if p.Tool != "" {
		b.WriteString(" (" + p.Tool + ")")
	}
	if p.Instance != "" {
		b.WriteString(" instance " + p.Instance)
	}
	if p.Param != "" {
		b.WriteString(" param " + p.Param)
	}
	if re, ok := errors.AsType[*ref.Error](p.Err); p.Ref != "" && (!ok || re.Expr != p.Ref) {
		b.WriteString(" ref " + p.Ref)
	}
	if p.Err != nil {
		b.WriteString(": ")
		b.WriteString(p.Err.Error())
	}
	return b.String()
}

func (p PlanProblem) Unwrap() error { return p.Err }

// CycleError names the calls of a dependency cycle in data-flow order:
// each call writes what the next one reads, and the last is the first.
type CycleError struct {
	Calls []int
	Tools []string
}

func (e *CycleError) Error() string {
	var b strings.Builder
	b.WriteString(ErrCycle.Error())
	b.WriteString(": ")
	for i, c := range e.Calls {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(strconv.Itoa(c))
		if e.Tools[i] != "" {
			b.WriteString(" (" + e.Tools[i] + ")")
		}
	}
	return b.String()
}

func (e *CycleError) Unwrap() error { return ErrCycle }

// neverReady is why a call of an executed plan did not run. Its text is
// the loop's, so the model reads the same words either way.
type neverReady struct{ err error }

func (e neverReady) Error() string   { return "never became ready: " + e.err.Error() }
func (e neverReady) Unwrap() []error { return []error{ErrNeverReady, e.err} }

// PlanMode is how a plan runs (012): eager, the default, where planning
// is execution, or lazy, where the model only plans and the plan runs
// after it was checked and approved.
type PlanMode string

// The plan modes.
const (
	PlanEager PlanMode = "eager"
	PlanLazy  PlanMode = "lazy"
)

// LastPlan returns the calls of the last plan message of msgs and its
// mode (a "mode" property of the message; eager when absent). ok is false
// when msgs hold no plan message.
func LastPlan(msgs []message.Message) (calls []json.RawMessage, mode PlanMode, ok bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Type != message.TypePlan {
			continue
		}
		if err := json.Unmarshal(m.Plan, &calls); err != nil {
			return nil, PlanEager, false
		}
		var extra struct {
			Mode PlanMode `json:"mode"`
		}
		if m.Extra != nil {
			_ = json.Unmarshal(m.Extra, &extra)
		}
		if extra.Mode == "" {
			extra.Mode = PlanEager
		}
		return calls, extra.Mode, true
	}
	return nil, PlanEager, false
}

// CheckPlan checks what a plan says on its own, with no context: every
// call is a JSON object with a _tool, output paths, output methods and
// references parse, and no call depends on itself through others. It
// returns a *PlanError listing every problem, or nil.
func CheckPlan(plan []json.RawMessage) error {
	g := analyse(plan)
	g.findCycles()
	return g.err(0)
}

// ValidatePlan checks a plan before it runs (012) against the context it
// will run in: everything CheckPlan checks, plus that every tool is known
// and every reference can be satisfied.
//
// A tool is known when a tool message of the context defines it, as in a
// Request, or when it is registered in cfg.Registry with [Registry.Tool].
// A call's literal parameters must fit its tool. A reference can be
// satisfied when some call's _outputPath writes a related path (one is a
// prefix of the other; an instanced call's output is seen only by calls
// of that instance) or when the context has a value there; for an
// expression, when every reference of one alternative can. It returns a
// *PlanError listing every problem, in plan order, or nil. Errors of the
// context itself (a malformed message, an unknown tool message) are
// returned as they are.
func ValidatePlan(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) error {
	log, err := message.NewLog(context...)
	if err != nil {
		return fmt.Errorf("agent: context: %w", err)
	}
	x, err := planExecutor(ctx, cfg, log)
	if err != nil {
		return err
	}
	g := analyse(plan)
	g.validate(x, log)
	return g.err(0)
}

// ExecutePlan runs a plan against a context without asking the model to
// plan (012): each call starts as soon as the calls whose output it reads
// have finished and its references resolve, at most cfg.Concurrency at
// once (DefaultConcurrency when 0), each completion possibly unblocking
// others. Output messages are appended to the log as calls finish;
// cfg.Confirm sees every call before it runs. A plan of explicit calls
// (an Activity resolves for each tool) needs no provider; a latent call
// without an inline _output needs cfg.Provider, which produces its result.
//
// The plan is validated first (see [ValidatePlan]); an invalid plan, or a
// latent call with no provider, is a *PlanError and nothing runs. Calls
// that fail do not stop the others: an activity's error goes to the last
// branch of a branching _outputPath, calls whose references never
// resolve are reported too (ErrNeverReady), and when nothing is left to
// run the plan itself and then an error message per failed call, in plan
// order, are appended, as a step of the loop does. The plan message is
// not repeated when it is already the last plan of the context.
//
// Every call is waited for, fire-and-forget ones (explicit, without
// _outputPath) included, so no goroutine outlives the execution.
//
// Cancelling ctx stops starting calls and waits for those running; the
// *LimitError returned then holds the log as it was. RunResult.Solution
// is nil and Steps 0: no request was made.
func ExecutePlan(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) (*RunResult, error) {
	return collectPlan(PlanEvents(ctx, cfg, plan, context))
}

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
	return collectPlan(PlanInstancesEvents(ctx, cfg, plan, context))
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

// PlanEvents is ExecutePlan as a stream of events: call started, finished
// and failed, every message appended, and done with the result (Step is
// 0). It is single-use and runs on the caller's goroutine; calls run on
// goroutines of their own. Breaking out of the stream cancels the running
// calls and waits for them.
func PlanEvents(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) iter.Seq2[RunEvent, error] {
	return planEvents(ctx, cfg, plan, nil, context)
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
// _instance is a *PlanError; a call that is not a JSON object is copied
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

// analyseInstances analyses and validates the plan of the template calls
// repeated per instance, the copies of instance k numbered from
// k*len(plan). Every copy of a call parses, depends and is checked as
// the template does, but for what the instance changes (its _instance
// and the context it reads): so the template is analysed once, and each
// copy only checks its literal parameters with its _instance and that
// its references can be satisfied in its instance. When anything is
// wrong the copies are analysed one by one, so the problems reported are
// exactly those of the expanded plan.
func analyseInstances(x *executor, log *message.Log, plan []json.RawMessage, in *instancing) (*planGraph, error) {
	if g := instanceGraph(x, log, plan, in); g != nil {
		return g, nil
	}
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
	g := analyse(calls)
	g.validate(x, log)
	g.executable(x)
	return nil, g.err(len(plan))
}

// instanceGraph returns the graph of a valid instanced plan, analysing
// the template once, or nil when the plan has a problem. The copies
// share the template's reads and writes; their deps are left out, since
// only validation needs them.
func instanceGraph(x *executor, log *message.Log, plan []json.RawMessage, in *instancing) *planGraph {
	t := analyse(plan)
	t.checkTools(x)
	t.findCycles()
	t.executable(x)
	if len(t.nodes) != len(plan) || t.err(0) != nil {
		return nil
	}
	stride, ids := len(plan), in.ids
	literals := make([]json.RawMessage, stride)
	checks := make([]*schema.Schema, stride)
	size, after := 0, 0
	for i, n := range t.nodes {
		var err error
		if literals[i], checks[i], err = literalParts(x, n); err != nil {
			return nil
		}
		after += len(n.after)
		size += len(in.bases[i]) + len(`,"_instance":}`)
	}
	size *= len(ids)
	for _, id := range ids {
		size += stride * len(ojson.Quote(id))
	}
	// One allocation each for the nodes, their calls and their waits.
	nodes := make([]planNode, len(ids)*stride)
	g := &planGraph{nodes: make([]*planNode, len(nodes))}
	g.byIndex = g.nodes // every call is well-formed
	raws := make([]byte, 0, size)
	afters := make([]int, 0, len(ids)*after)
	var lit []byte
	for k, id := range ids {
		src := log.Instance(id)
		for i, tn := range t.nodes {
			j := k*stride + i
			lit = withInstance(lit[:0], literals[i], id)
			if checks[i].Validate(lit) != nil {
				return nil
			}
			for _, rd := range tn.reads {
				if _, ok := t.unsatisfied(tn, rd, src); ok {
					return nil
				}
			}
			start := len(raws)
			raws = withInstance(raws, in.bases[i], id)
			from := len(afters)
			for _, a := range tn.after {
				afters = append(afters, k*stride+a)
			}
			n := &nodes[j]
			*n = planNode{index: j, raw: raws[start:len(raws):len(raws)], call: tn.call, out: tn.out,
				reads: tn.reads, writes: tn.writes, after: afters[from:len(afters):len(afters)]}
			n.call.Instance = id
			g.nodes[j] = n
		}
	}
	return g
}

// lazyPrompt asks the model to plan without executing (012, lazy mode).
// It is part of replay: keep it stable.
const lazyPrompt = "## Planning only\n" +
	"Lazy mode: write the complete plan as calls, and do not carry out any of them. " +
	"Do not write _output for any call: every call runs after the plan is checked and approved. " +
	"Wire the calls together with _outputPath and references (†kind.path), " +
	"and keep a branching _outputPath (†state.ok || †state.failed) as it is: the branch is chosen when the plan runs. " +
	"Leave output null unless the answer needs no call."

// Plan asks the model for a plan without running it (012, lazy mode):
// one Request whose context ends with an instruction to only plan, whose
// calls are returned unexecuted and checked with [ValidatePlan] against
// the context given. The caller can show the calls for approval, change
// them, and run them with [ExecutePlan]. An invalid plan returns the
// solution and its calls with the *PlanError. Plan asks for one solution
// (cfg.N is ignored).
func Plan(ctx context.Context, cfg Config, schema json.RawMessage, context []message.Message) (*Solution, []json.RawMessage, error) {
	msgs := append(context[:len(context):len(context)],
		message.Message{Type: message.TypeText, Role: message.RoleSystem, Text: lazyPrompt})
	cfg.N = 1
	resp, err := Request(ctx, cfg, schema, msgs)
	if err != nil {
		return nil, nil, err
	}
	sol := &resp.Solutions[0]
	if err := ValidatePlan(ctx, cfg, sol.Calls, context); err != nil {
		return sol, sol.Calls, err
	}
	return sol, sol.Calls, nil
}

// PlanGraph draws a plan as a Mermaid flowchart (graph TD): a node per
// call, labelled with its index and tool; an edge from each call to every
// call that reads what it writes, labelled with the reference read (dotted
// when it comes through a later branch of a branching _outputPath, which
// is taken on failure or by the activity's choice); and a source node per
// reference no call writes (input and context data), with an edge to each
// call that reads it. The output is deterministic. Malformed calls are a
// *PlanError; cycles are drawn.
func PlanGraph(plan []json.RawMessage) (string, error) {
	g := analyse(plan)
	if err := g.err(0); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("graph TD\n")
	for _, n := range g.nodes {
		label := strconv.Itoa(n.index) + ": " + n.call.Tool
		if n.call.Instance != "" {
			label += " (_instance: " + n.call.Instance + ")"
		}
		fmt.Fprintf(&b, "    c%d[\"%s\"]\n", n.index, mermaidText(label))
	}
	type edge struct {
		from, to string
		label    string
	}
	sources := map[string]string{} // reference → node id
	var sourceOrder []string
	var edges []edge
	dotted := map[edge]bool{}
	seen := map[edge]bool{}
	for _, n := range g.nodes {
		for _, rd := range n.reads {
			for _, x := range rd.expr.Refs() {
				label := strings.TrimPrefix(x.String(), ref.Dagger)
				var ws []planEdge
				for _, d := range n.deps {
					if d.param == rd.param && d.ref.Offset == x.Offset {
						ws = append(ws, d)
					}
				}
				if len(ws) == 0 {
					id, ok := sources[label]
					if !ok {
						id = "s" + strconv.Itoa(len(sources))
						sources[label] = id
						sourceOrder = append(sourceOrder, label)
					}
					e := edge{id, "c" + strconv.Itoa(n.index), ""}
					if !seen[e] {
						seen[e] = true
						edges = append(edges, e)
					}
					continue
				}
				for _, w := range ws {
					e := edge{"c" + strconv.Itoa(w.from), "c" + strconv.Itoa(n.index), label}
					if !seen[e] {
						seen[e] = true
						edges = append(edges, e)
						dotted[e] = true
					}
					if w.branch == 0 {
						dotted[e] = false
					}
				}
			}
		}
	}
	for _, s := range sourceOrder {
		fmt.Fprintf(&b, "    %s{{\"%s\"}}\n", sources[s], mermaidText(s))
	}
	for _, e := range edges {
		switch {
		case e.label == "":
			fmt.Fprintf(&b, "    %s --> %s\n", e.from, e.to)
		case dotted[e]:
			fmt.Fprintf(&b, "    %s -.->|%s| %s\n", e.from, mermaidText(e.label), e.to)
		default:
			fmt.Fprintf(&b, "    %s -->|%s| %s\n", e.from, mermaidText(e.label), e.to)
		}
	}
	return b.String(), nil
}

// mermaidText escapes what would end a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "|", "#124;").Replace(s)
}

// planGraph is a plan analysed: its calls, what each reads and writes, and
// the dependencies between them.
type planGraph struct {
	nodes    []*planNode // well-formed calls only, in plan order
	byIndex  []*planNode // per call of the plan; nil for a malformed one
	problems [][]PlanProblem
}

// planNode is one well-formed call of a plan.
type planNode struct {
	index  int
	raw    json.RawMessage
	call   message.CallMeta
	out    *message.Output // shared by the instances of a template's call
	reads  []planRead
	writes []planWrite
	deps   []planEdge // what this call reads that other calls (or itself) write
	after  []int      // the calls it waits for: writers of what it reads, self excluded, sorted
}

// planRead is an expression in a parameter of a call.
type planRead struct {
	param string // JSON pointer
	expr  ref.Expr
}

// planWrite is one target of an output path.
type planWrite struct {
	ref    ref.Ref
	branch int // the alternative it belongs to
}

// planEdge is a reference of a call that another call's output path
// writes.
type planEdge struct {
	from   int    // index of the writer
	param  string // where the reader holds the reference
	ref    ref.Ref
	branch int // the writer's alternative
}

// analyse parses every call and links readers to writers.
func analyse(plan []json.RawMessage) *planGraph {
	g := &planGraph{problems: make([][]PlanProblem, len(plan)), byIndex: make([]*planNode, len(plan))}
	type target struct {
		node *planNode
		planWrite
	}
	// Writers by kind and instance: a call sees the writes of its own
	// instance and global ones, so a reader looks at two lists, not at
	// every call of an instanced plan.
	type key struct{ kind, instance string }
	writers := map[key][]target{} // the targets of output paths, in plan order
	for i, raw := range plan {
		n, problems := parseNode(i, raw)
		g.problems[i] = problems
		if n == nil {
			continue
		}
		g.nodes = append(g.nodes, n)
		g.byIndex[i] = n
		for _, t := range n.writes {
			k := key{t.ref.Kind, n.call.Instance}
			writers[k] = append(writers[k], target{n, t})
		}
	}
	for _, r := range g.nodes {
		for _, rd := range r.reads {
			for _, x := range rd.expr.Refs() {
				lists := [][]target{writers[key{x.Kind, ""}]}
				if r.call.Instance != "" {
					lists = append(lists, writers[key{x.Kind, r.call.Instance}])
				}
				for _, list := range lists {
					for _, t := range list {
						if t.ref.Path.Related(x.Path) {
							r.deps = append(r.deps, planEdge{from: t.node.index, param: rd.param, ref: x, branch: t.branch})
						}
					}
				}
			}
		}
		for _, d := range r.deps {
			if d.from != r.index {
				r.after = append(r.after, d.from)
			}
		}
		slices.Sort(r.after)
		r.after = slices.Compact(r.after)
	}
	return g
}

// parseNode parses one call; a call whose meta-properties are malformed
// gives no node.
func parseNode(i int, raw json.RawMessage) (*planNode, []PlanProblem) {
	pc, err := parseCall(raw, false)
	if err != nil {
		if e := metaError(raw); e != nil {
			err = e
		} else if ce, ok := errors.AsType[*CallError](err); ok {
			err = ce.Err
		}
		return nil, []PlanProblem{{Call: i, Tool: planTool(raw), Err: fmt.Errorf("%w: %w", ErrInvalidCall, err)}}
	}
	c := message.CallMeta{Tool: pc.Tool, Instance: pc.Instance, OutputPath: pc.OutputPath, OutputMethod: pc.OutputMethod}
	n := &planNode{index: i, raw: raw, call: c}
	var problems []PlanProblem
	add := func(param, r string, err error) {
		problems = append(problems, PlanProblem{Call: i, Tool: c.Tool, Instance: c.Instance, Param: param, Ref: r, Err: err})
	}
	if c.OutputPath != "" {
		e, err := ref.Parse(c.OutputPath)
		if err != nil {
			add("/_outputPath", c.OutputPath, err)
		}
		for b, alt := range e.Alts {
			for _, t := range alt {
				n.writes = append(n.writes, planWrite{ref: t, branch: b})
			}
		}
	}
	if c.OutputMethod != "" {
		if _, err := ref.ParseMethod(c.OutputMethod); err != nil {
			add("/_outputMethod", "", err)
		}
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		add("", "", fmt.Errorf("%w: %w", ErrInvalidCall, err)) // cannot happen: parseCall decoded it
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if !strings.HasPrefix(k, "_") {
			n.collect(params[k], "/"+ref.PointerEscape(k), add)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	n.out, _ = message.ParseOutput(c) // checked above
	return n, nil
}

// collect records the expressions found in v, a parameter value at the
// JSON pointer at, as ref.Substitute would read them.
func (n *planNode) collect(v any, at string, add func(param, r string, err error)) {
	switch c := v.(type) {
	case string:
		if !ref.IsExpression(c) {
			return
		}
		e, err := ref.Parse(c)
		if err != nil {
			add(at, c, err)
			return
		}
		n.reads = append(n.reads, planRead{param: at, expr: e})
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(c)) {
			n.collect(c[k], at+"/"+ref.PointerEscape(k), add)
		}
	case []any:
		for i, x := range c {
			n.collect(x, at+"/"+strconv.Itoa(i), add)
		}
	}
}

// metaError says what is wrong with the shape of a call, in words, or
// returns nil.
func metaError(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a call must be a JSON object, got %s", jsonKind(v))
	}
	for _, k := range []string{"_tool", "_instance", "_outputPath", "_outputMethod"} {
		if x, ok := obj[k]; ok {
			if _, ok := x.(string); !ok {
				return fmt.Errorf("%s must be a string, got %s", k, jsonKind(x))
			}
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// planTool returns a call's _tool for messages about it, or "" when it
// has none (or not a string).
func planTool(raw json.RawMessage) string {
	var t struct {
		Tool any `json:"_tool"`
	}
	_ = json.Unmarshal(raw, &t)
	s, _ := t.Tool.(string)
	return s
}

func (g *planGraph) node(i int) *planNode { return g.byIndex[i] }

func (g *planGraph) add(n *planNode, p PlanProblem) {
	p.Call, p.Tool, p.Instance = n.index, n.call.Tool, n.call.Instance
	g.problems[n.index] = append(g.problems[n.index], p)
}

// err returns the problems found as a *PlanError, or nil. With stride > 0
// the plan is a template repeated per instance, and problems name the
// template's call.
func (g *planGraph) err(stride int) error {
	var all []PlanProblem
	seen := map[string]bool{}
	for _, ps := range g.problems {
		for _, p := range ps {
			if stride > 0 {
				p.Call %= stride
				if ce, ok := p.Err.(*CycleError); ok {
					c := &CycleError{Tools: ce.Tools}
					for _, i := range ce.Calls {
						c.Calls = append(c.Calls, i%stride)
					}
					p.Err = c
				}
				if seen[p.Error()] {
					continue // a malformed template call, once per instance
				}
				seen[p.Error()] = true
			}
			all = append(all, p)
		}
	}
	if all == nil {
		return nil
	}
	return &PlanError{Problems: all}
}

// findCycles reports each dependency cycle once, at its first call, by
// the reference that closes it.
func (g *planGraph) findCycles() {
	for _, scc := range g.components() {
		s := scc[0]
		in := map[int]bool{}
		for _, i := range scc {
			in[i] = true
		}
		// Breadth-first from s along the data flow (writer → reader) to
		// the writer that s reads from: the shortest cycle through s.
		readers := map[int][]int{}
		for _, i := range scc {
			for _, d := range g.node(i).deps {
				if in[d.from] {
					readers[d.from] = append(readers[d.from], i)
				}
			}
		}
		sn := g.node(s)
		closes := map[int]planEdge{}
		for _, d := range sn.deps {
			if _, ok := closes[d.from]; !ok && in[d.from] {
				closes[d.from] = d
			}
		}
		parent := map[int]int{s: -1}
		queue := []int{s}
		last := -1
		for len(queue) > 0 && last < 0 {
			i := queue[0]
			queue = queue[1:]
			if _, ok := closes[i]; ok {
				last = i
				break
			}
			for _, j := range slices.Sorted(slices.Values(readers[i])) {
				if _, ok := parent[j]; !ok {
					parent[j] = i
					queue = append(queue, j)
				}
			}
		}
		var path []int
		for i := last; i >= 0; i = parent[i] {
			path = append(path, i)
		}
		slices.Reverse(path)
		path = append(path, s)
		ce := &CycleError{Calls: path}
		for _, i := range path {
			ce.Tools = append(ce.Tools, g.node(i).call.Tool)
		}
		d := closes[last]
		g.add(sn, PlanProblem{Param: d.param, Ref: d.ref.String(), Err: ce})
	}
}

// components returns the strongly connected components of the
// dependency graph that hold a cycle (more than one call, or a call that
// reads its own output), each sorted, in order of their first call.
func (g *planGraph) components() [][]int {
	// Tarjan's algorithm over the edges reader → writer.
	index := map[int]int{}
	low := map[int]int{}
	onStack := map[int]bool{}
	var stack []int
	var out [][]int
	next := 0
	var visit func(n *planNode)
	visit = func(n *planNode) {
		index[n.index], low[n.index] = next, next
		next++
		stack = append(stack, n.index)
		onStack[n.index] = true
		for _, d := range n.deps {
			if _, ok := index[d.from]; !ok {
				visit(g.node(d.from))
				low[n.index] = min(low[n.index], low[d.from])
			} else if onStack[d.from] {
				low[n.index] = min(low[n.index], index[d.from])
			}
		}
		if low[n.index] != index[n.index] {
			return
		}
		var scc []int
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[top] = false
			scc = append(scc, top)
			if top == n.index {
				break
			}
		}
		self := slices.ContainsFunc(n.deps, func(d planEdge) bool { return d.from == n.index })
		if len(scc) > 1 || self {
			slices.Sort(scc)
			out = append(out, scc)
		}
	}
	for _, n := range g.nodes {
		if _, ok := index[n.index]; !ok {
			visit(n)
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// validate adds the problems that need the context: unknown tools,
// literal parameters that do not fit, cycles and references nothing can
// satisfy.
func (g *planGraph) validate(x *executor, log *message.Log) {
	g.checkTools(x)
	g.findCycles()
	for _, n := range g.nodes {
		var src ref.Source = log
		if n.call.Instance != "" {
			src = log.Instance(n.call.Instance)
		}
		for _, rd := range n.reads {
			if missing, ok := g.unsatisfied(n, rd, src); ok {
				g.add(n, PlanProblem{Param: rd.param, Ref: missing.String(),
					Err: fmt.Errorf("%w: no call writes it and the context has no value there", ErrUnsatisfiable)})
			}
		}
	}
}

// checkTools adds the problems of unknown tools and of literal
// parameters that do not fit their tool.
func (g *planGraph) checkTools(x *executor) {
	for _, n := range g.nodes {
		if x.build.Definition(n.call.Tool) == nil {
			tools := x.build.Tools()
			g.add(n, PlanProblem{Err: fmt.Errorf("%w %q (tools: %s)", ErrUnknownTool, n.call.Tool, strings.Join(tools, ", "))})
			continue
		}
		if err := literalCheck(x, n); err != nil {
			g.add(n, PlanProblem{Err: fmt.Errorf("%w: %w", ErrInvalidCall, err)})
		}
	}
}

// literalCheck checks the literal parameters of a call against its
// tool, as a call is checked once its references are resolved: the
// parameters that hold an expression, at any depth, are left out, and so
// is their place in the schema's required list.
func literalCheck(x *executor, n *planNode) error {
	call, s, err := literalParts(x, n)
	if err != nil {
		return err
	}
	return s.Validate(call)
}

// literalParts returns what literalCheck validates: the call without
// the parameters that hold an expression, compact, and the tool's schema
// without them in its required list.
func literalParts(x *executor, n *planNode) (json.RawMessage, *schema.Schema, error) {
	call, err := ojson.Parse(n.raw)
	if err != nil {
		return nil, nil, err
	}
	s, err := ojson.Parse(x.build.shape(n.call.Tool).check)
	if err != nil {
		return nil, nil, fmt.Errorf("tool schema: %w", err)
	}
	skip := map[string]bool{}
	for _, rd := range n.reads {
		top, _, _ := strings.Cut(rd.param[1:], "/")
		skip[strings.NewReplacer("~1", "/", "~0", "~").Replace(top)] = true
	}
	if len(skip) > 0 {
		for k := range skip {
			call.Delete(k)
		}
		var required []string
		if r := s.Get("required"); r != nil {
			if err := json.Unmarshal(r, &required); err != nil {
				return nil, nil, fmt.Errorf("tool schema: required: %w", err)
			}
		}
		required = slices.DeleteFunc(required, func(k string) bool { return skip[k] })
		rb, _ := json.Marshal(required)
		s.Set("required", rb)
	}
	compiled, err := x.reg.compile(s.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("tool schema: %w", err)
	}
	return call.Bytes(), compiled, nil
}

// unsatisfied returns the first reference of the first alternative of rd
// that nothing can satisfy, when no alternative can be satisfied whole.
func (g *planGraph) unsatisfied(n *planNode, rd planRead, src ref.Source) (ref.Ref, bool) {
	var first *ref.Ref
alts:
	for _, alt := range rd.expr.Alts {
		for _, x := range alt {
			if !g.satisfiable(n, rd.param, x, src) {
				if first == nil {
					first = &x
				}
				continue alts
			}
		}
		return ref.Ref{}, false
	}
	return *first, true
}

func (g *planGraph) satisfiable(n *planNode, param string, x ref.Ref, src ref.Source) bool {
	for _, d := range n.deps {
		if d.param == param && d.ref.Offset == x.Offset {
			return true
		}
	}
	_, err := src.Lookup(x.Kind, x.Path)
	return err == nil || !errors.Is(err, ref.ErrNotFound)
}

// executable adds the problems that stop a valid plan from running: a
// tool naming an activity that is not registered, and a latent call that
// needs the model when there is no provider.
func (g *planGraph) executable(x *executor) {
	for _, n := range g.nodes {
		def := x.build.Definition(n.call.Tool)
		if def == nil {
			continue // reported as an unknown tool
		}
		a, _, err := x.reg.resolveActivity(n.call.Tool, def)
		switch {
		case err != nil:
			g.add(n, PlanProblem{Err: err})
		case a == nil && x.cfg.Provider == nil:
			var inline struct {
				Output json.RawMessage `json:"_output"`
			}
			if json.Unmarshal(n.raw, &inline) == nil && inline.Output != nil {
				continue // eager: the model already wrote the result
			}
			g.add(n, PlanProblem{Err: fmt.Errorf("%w: the tool has no activity and the call no _output, so the model must produce its result", ErrNoProvider)})
		}
	}
}

// planExecutor prepares the tools of a context for validating and
// running a plan: those of the context's tool messages, as a Request
// defines them, and those registered in the registry that the context
// does not define.
func planExecutor(ctx context.Context, cfg Config, log *message.Log) (*executor, error) {
	reg := cfg.registry()
	p, err := prepareBuild(ctx, cfg, nil, log, true)
	if err != nil {
		return nil, err
	}
	reg.mu.RLock()
	names := slices.Sorted(maps.Keys(reg.tools))
	defs := make([]json.RawMessage, len(names))
	for i, n := range names {
		defs[i] = reg.tools[n]
	}
	reg.mu.RUnlock()
	for i, n := range names {
		if p.build.Definition(n) != nil {
			continue
		}
		if err := defineTool(p.build, n, defs[i]); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	p.build.shown = shown{} // an entry per data identity
	return &executor{cfg: &cfg, reg: reg, build: p.build}, nil
}

func collectPlan(events iter.Seq2[RunEvent, error]) (*RunResult, error) {
	var res *RunResult
	for ev, err := range events {
		if err != nil {
			if le, ok := errors.AsType[*LimitError](err); ok {
				return le.Result, err
			}
			return res, err
		}
		if ev.Kind == EventDone {
			res = ev.Result
		}
	}
	return res, nil
}

// planEvents runs plan, or with in, plan as a template once per instance.
func planEvents(ctx context.Context, cfg Config, plan []json.RawMessage, in *instancing, msgs []message.Message) iter.Seq2[RunEvent, error] {
	return func(yield func(RunEvent, error) bool) {
		ctx, cancel := context.WithCancel(platform.WithClock(ctx, cfg.Clock))
		defer cancel()
		log, err := message.NewLog(msgs...)
		if err != nil {
			yield(RunEvent{}, fmt.Errorf("agent: context: %w", err))
			return
		}
		var j *journal
		if cfg.Store != nil {
			if j, err = openJournal(ctx, cfg, kindPlan, runSpec{Plan: plan, Instanced: in != nil}, msgs, cfg.resume != nil); err != nil {
				yield(RunEvent{}, err)
				return
			}
			cfg.RunID = j.run.ID
			j.result = func() *RunResult { return &RunResult{Log: log, RunID: cfg.RunID} }
			var finish func()
			yield, finish = j.wrap(ctx, yield)
			defer finish()
		}
		x, err := planExecutor(ctx, cfg, log)
		if err != nil {
			yield(RunEvent{}, err)
			return
		}
		var g *planGraph
		if in != nil {
			g, err = analyseInstances(x, log, plan, in)
		} else {
			g = analyse(plan)
			g.validate(x, log)
			g.executable(x)
			err = g.err(0)
		}
		if err != nil {
			yield(RunEvent{}, err)
			return
		}
		r := &planRun{cfg: cfg, exec: x, log: log, g: g, stream: stream{yield: yield}, done: make(chan planDone)}
		if j != nil {
			j.result = r.result
			// Calls settle and start in groups: one Append per group, made
			// before any call of the group runs.
			j.batch, r.journal = true, j
		}
		defer func() {
			cancel() // stop calls still running, then wait for them
			r.wait()
		}()
		r.run(ctx, plan, msgs)
	}
}

// planDone is a finished call of a plan.
type planDone struct {
	node int
	call *Call
	msgs []message.Message
	resp *Response
	err  error
}

// planRun is the scheduler of one plan execution. Only the goroutine of
// the stream touches it; calls report on done.
type planRun struct {
	stream
	cfg     Config
	journal *journal // set when the run is durable
	exec    *executor
	log     *message.Log
	g       *planGraph

	left    []int // per call: the calls it waits for that have not settled
	readers []int // the calls that wait for each call, call by call
	readAt  []int // per call: where its readers start in readers; one more at the end
	ready   []int // calls whose dependencies have settled, not started, in plan order
	readyIn []int // the array ready was last cut from; see unready
	running int
	done    chan planDone
	errs    map[int]message.Message // the error message of each failed call
	usage   provider.Usage
}

func (r *planRun) fail(err error) { r.end(err, r.result()) }

func (r *planRun) result() *RunResult {
	return &RunResult{Log: r.log, Usage: r.usage, RunID: r.cfg.RunID}
}

func (r *planRun) run(ctx context.Context, shown []json.RawMessage, msgs []message.Message) {
	conc := r.cfg.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	calls := len(r.g.byIndex)
	r.left, r.readAt, r.errs = make([]int, calls), make([]int, calls+1), map[int]message.Message{}
	for _, n := range r.g.nodes {
		r.left[n.index] = len(n.after)
		for _, w := range n.after {
			r.readAt[w+1]++
		}
		if len(n.after) == 0 {
			r.ready = append(r.ready, n.index)
		}
	}
	for i := range calls {
		r.readAt[i+1] += r.readAt[i]
	}
	r.readers = make([]int, r.readAt[calls])
	next := slices.Clone(r.readAt[:calls])
	for _, n := range r.g.nodes {
		for _, w := range n.after {
			r.readers[next[w]] = n.index
			next[w]++
		}
	}
	for {
		if ctx.Err() == nil && !r.launch(ctx, conc) {
			return
		}
		if r.running == 0 {
			if ctx.Err() != nil || len(r.ready) == 0 {
				break
			}
			// Nothing runs and nothing can start: the calls left are
			// blocked for good. Settling them may let calls that read
			// them through a fallback (||) run.
			blocked := r.ready
			r.ready = nil
			for _, i := range blocked {
				if !r.neverReady(i) {
					return
				}
			}
			continue
		}
		var c planDone
		if ctx.Err() != nil {
			c = <-r.done
		} else {
			select {
			case c = <-r.done:
			case <-ctx.Done():
				continue
			}
		}
		if !r.finish(c) {
			return
		}
	}
	var tail []message.Message
	if plan, _ := json.Marshal(shown); len(shown) > 0 && !samePlan(msgs, plan) {
		tail = append(tail, message.Message{Type: message.TypePlan, Plan: plan})
	}
	for _, i := range slices.Sorted(maps.Keys(r.errs)) {
		tail = append(tail, r.errs[i])
	}
	if !r.appendAll(tail) {
		return
	}
	if err := ctx.Err(); err != nil {
		r.fail(err)
		return
	}
	res := r.result()
	r.emit(RunEvent{Kind: EventDone, Usage: &res.Usage, Result: res})
}

// samePlan reports whether the last plan message of msgs is plan.
func samePlan(msgs []message.Message, plan json.RawMessage) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == message.TypePlan {
			var a, b bytes.Buffer
			return json.Compact(&a, msgs[i].Plan) == nil && json.Compact(&b, plan) == nil && bytes.Equal(a.Bytes(), b.Bytes())
		}
	}
	return false
}

// launch starts ready calls, in plan order, while there is room. A call
// whose references do not resolve yet stays ready; it is tried again
// after the next completion.
func (r *planRun) launch(ctx context.Context, conc int) bool {
	var starts []func()
	// The calls start once what they depend on and their own starts are
	// durable: a journaled run writes them in one Append first.
	begin := func() bool {
		if r.journal != nil {
			if err := r.journal.flush(ctx); err != nil {
				r.running -= len(starts)
				r.fail(err)
				return false
			}
		}
		for _, s := range starts {
			s()
		}
		return true
	}
	stop := func() bool {
		r.running -= len(starts) // they never start
		return false
	}
	for i := 0; i < len(r.ready) && r.running < conc; {
		n := r.g.node(r.ready[i])
		id := strconv.Itoa(n.index)
		if rs := r.cfg.resume; rs != nil {
			if em, ok := rs.settled[id]; ok { // it ran before the run stopped
				r.ready = r.unready(i)
				if em != nil {
					r.errs[n.index] = *em
				}
				r.settle(n.index)
				i = 0
				continue
			}
		}
		c, err := r.exec.preparePlanned(r.log, n.raw, &n.call, n.out)
		if errors.Is(err, errBlocked) {
			i++
			continue
		}
		r.ready = r.unready(i)
		if err == nil {
			err = r.exec.interrupted(r.cfg.resume, id, c)
		}
		if err == nil && r.cfg.Confirm != nil {
			d, cerr := r.cfg.Confirm(ctx, c)
			switch {
			case cerr != nil:
				r.fail(fmt.Errorf("agent: confirm: %w", cerr))
				return stop()
			case d.Reject != "":
				err = &CallError{Kind: "rejected", Tool: c.Tool, Err: errors.New(d.Reject)}
			case d.Replace != nil:
				if c, err = r.exec.prepareCall(r.log, bytes.Clone(d.Replace)); err != nil {
					c = &Call{Raw: d.Replace, Tool: planTool(d.Replace)}
				}
			}
		}
		if c == nil {
			c = &Call{Raw: n.raw, Tool: n.call.Tool, Instance: n.call.Instance}
		}
		c.ID = id
		if err != nil {
			if !r.failed(n.index, c, err) || !r.settle(n.index) {
				return stop()
			}
			i = 0 // settling may have made earlier calls ready
			continue
		}
		// Started is yielded before the call runs: a durable run records
		// it first.
		if !r.emit(RunEvent{Kind: EventCallStarted, Call: c}) {
			return stop()
		}
		r.running++
		start := func() {
			platform.Go(func() {
				msgs, resp, err := r.exec.runCall(ctx, c)
				r.done <- planDone{node: n.index, call: c, msgs: msgs, resp: resp, err: err}
			})
		}
		if r.journal == nil {
			start() // nothing to make durable first
			continue
		}
		starts = append(starts, start)
	}
	return begin()
}

// neverReady reports a call whose references never resolved.
func (r *planRun) neverReady(i int) bool {
	n := r.g.node(i)
	_, err := r.exec.preparePlanned(r.log, n.raw, &n.call, n.out)
	if j, ok := err.(interface{ Unwrap() []error }); ok && errors.Is(err, errBlocked) {
		err = j.Unwrap()[1] // the reference that is missing
	}
	if err == nil {
		err = errors.New("it was never run")
	}
	c := &Call{Raw: n.raw, Tool: n.call.Tool, Instance: n.call.Instance, ID: strconv.Itoa(i)}
	return r.failed(i, c, &CallError{Kind: Structural, Tool: n.call.Tool, Err: neverReady{err}}) && r.settle(i)
}

// failed records the error of a call.
func (r *planRun) failed(i int, c *Call, err error) bool {
	r.errs[i] = ErrorMessage(c.Raw, err)
	return r.emit(RunEvent{Kind: EventCallFailed, Call: c, Err: err})
}

// settle marks call i finished, one way or another, and makes ready the
// calls that waited only for it.
func (r *planRun) settle(i int) bool {
	for _, j := range r.readers[r.readAt[i]:r.readAt[i+1]] {
		r.left[j]--
		if r.left[j] == 0 {
			k, _ := slices.BinarySearch(r.ready, j)
			r.ready = r.insertReady(k, j)
		}
	}
	return true
}

// unready removes position i of r.ready. Calls mostly start from the
// front, and those they unblock come right after it: so a removal at the
// front only moves the start of the slice, leaving room in its array for
// insertReady, and neither copies a queue that may hold a call per
// instance.
func (r *planRun) unready(i int) []int {
	if i == 0 {
		return r.ready[1:]
	}
	return slices.Delete(r.ready, i, i+1)
}

// insertReady inserts j at position k of r.ready, moving the shorter
// side: the front into room that unready left, or else the back.
func (r *planRun) insertReady(k, j int) []int {
	s := r.ready
	if off := r.readyOffset(); off > 0 && k < len(s)/2 {
		s = r.readyIn[off-1 : off+len(s)]
		copy(s[:k], s[1:k+1])
		s[k] = j
		return s
	}
	s = slices.Insert(s, k, j)
	r.readyIn = s[:cap(s)]
	return s
}

// readyOffset returns where r.ready starts in r.readyIn, or -1 when it
// is not a part of it.
func (r *planRun) readyOffset() int {
	c, in := cap(r.ready), cap(r.readyIn)
	if c == 0 || c > in || &r.ready[:c][c-1] != &r.readyIn[:in][in-1] {
		return -1
	}
	return in - c
}

// finish records a completed call.
func (r *planRun) finish(c planDone) bool {
	r.running--
	if c.resp != nil {
		r.usage.Add(c.resp.Usage)
	}
	if !r.appendAll(c.msgs) {
		return false
	}
	if c.err != nil {
		if !r.failed(c.node, c.call, c.err) {
			return false
		}
	} else if !r.emit(RunEvent{Kind: EventCallFinished, Call: c.call}) {
		return false
	}
	return r.settle(c.node)
}

func (r *planRun) appendAll(msgs []message.Message) bool {
	for i := range msgs {
		if err := r.log.Append(msgs[i]); err != nil {
			r.fail(fmt.Errorf("agent: append: %w", err))
			return false
		}
		if !r.emit(RunEvent{Kind: EventMessage, Message: &msgs[i]}) {
			return false
		}
	}
	return true
}

// wait lets every call goroutine finish after the stream was abandoned.
func (r *planRun) wait() {
	for r.running > 0 {
		<-r.done
		r.running--
	}
}
