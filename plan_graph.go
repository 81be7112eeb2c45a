package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/schema"
)

// Plan analysis (012): what each call reads and writes, the dependencies
// between calls, cycles, and the checks ValidatePlan makes.

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

// planRead is an expression in a parameter of a call, or a reference in
// its _scopes (scope): what the call reads through them is as much a
// dependency as what its parameters read.
type planRead struct {
	param string // JSON pointer
	expr  ref.Expr
	scope bool
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

// analyse parses every call and links readers to writers. With an
// executor, a call's scopes are those its tool provisions, if any (015);
// without one (a plan on its own), those the call names.
func analyse(plan []json.RawMessage, ex *executor) *planGraph {
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
		n, problems := parseNode(i, raw, ex)
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
						// A call sees its scopes as they were before it
						// ran: what it writes there is no reading of its own.
						if rd.scope && t.node == r {
							continue
						}
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
func parseNode(i int, raw json.RawMessage, x *executor) (*planNode, []PlanProblem) {
	pc, err := parseCall(raw)
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
	n.collectScopes(x, add)
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

// collectScopes records the references of the call's scopes as reads,
// and reports scopes that are malformed.
func (n *planNode) collectScopes(x *executor, add func(param, r string, err error)) {
	var def json.RawMessage
	if x != nil {
		if sh := x.build.shape(n.call.Tool); sh != nil {
			def = sh.def
		}
	}
	scopes, scoped, err := callScopes(def, n.raw)
	if err != nil {
		add("/_scopes", "", errorf("%w: %w", ErrInvalidCall, err))
		return
	}
	if !scoped {
		return
	}
	for k, s := range scopes {
		param := "/_scopes/" + strconv.Itoa(k)
		r, isRef, err := parseScope(s)
		switch {
		case err != nil:
			add(param, "", errorf("%w: %w", ErrInvalidCall, err))
		case isRef:
			n.reads = append(n.reads, planRead{param: param, expr: ref.Expr{Text: s, Alts: []ref.Group{{r}}}, scope: true})
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
		scopes, scoped := nodeScopes(x, n)
		for _, rd := range n.reads {
			missing, ok := g.unsatisfied(n, rd, src, scopes, scoped)
			if !ok {
				continue
			}
			why := "no call writes it and the context has no value there"
			if scoped && !scopes.holds(missing.Kind, missing.Path) {
				why = scopes.outside()
			}
			g.add(n, PlanProblem{Param: rd.param, Ref: missing.String(), Err: fmt.Errorf("%w: %s", ErrUnsatisfiable, why)})
		}
	}
}

// nodeScopes returns the scopes of a call (015), provisioned by its tool
// or named by the call, and whether it has any. Malformed scopes are
// reported by parseNode.
func nodeScopes(x *executor, n *planNode) (scopeSet, bool) {
	var def json.RawMessage
	if sh := x.build.shape(n.call.Tool); sh != nil {
		def = sh.def
	}
	scopes, scoped, err := callScopes(def, n.raw)
	if err != nil || !scoped {
		return scopeSet{}, false
	}
	set, err := parseScopes(scopes)
	return set, err == nil
}

// checkTools adds the problems of unknown tools and of literal
// parameters that do not fit their tool.
func (g *planGraph) checkTools(x *executor) {
	// The copies of an instanced plan's call leave out the same
	// parameters of the same tool: each such schema is made once.
	schemas := map[string]*schema.Schema{}
	for _, n := range g.nodes {
		if x.build.shape(n.call.Tool) == nil {
			known := "no tool is defined" // not an empty list, which reads as cut off
			if tools := x.build.Tools(); len(tools) > 0 {
				known = "tools: " + strings.Join(tools, ", ")
			}
			g.add(n, PlanProblem{Err: fmt.Errorf("%w %q (%s)", ErrUnknownTool, n.call.Tool, known)})
			continue
		}
		if err := literalCheck(x, n, schemas); err != nil {
			g.add(n, PlanProblem{Err: fmt.Errorf("%w: %w", ErrInvalidCall, err)})
		}
	}
}

// literalCheck checks the literal parameters of a call against its
// tool, as a call is checked once its references are resolved: the
// parameters that hold an expression, at any depth, are left out, and so
// is their place in the schema's required list.
func literalCheck(x *executor, n *planNode, schemas map[string]*schema.Schema) error {
	call, err := ojson.Parse(n.raw)
	if err != nil {
		return err
	}
	var skip []string
	for _, rd := range n.reads {
		if rd.scope {
			continue
		}
		top, _, _ := strings.Cut(rd.param[1:], "/")
		skip = append(skip, strings.NewReplacer("~1", "/", "~0", "~").Replace(top))
	}
	slices.Sort(skip)
	skip = slices.Compact(skip)
	for _, k := range skip {
		call.Delete(k)
	}
	key := n.call.Tool + "\x00" + strings.Join(skip, "\x00")
	s, ok := schemas[key]
	if !ok {
		if s, err = literalSchema(x, n.call.Tool, skip); err != nil {
			return err
		}
		schemas[key] = s
	}
	return s.Validate(call.Bytes())
}

// literalSchema returns the check schema of tool without the parameters
// of skip in its required list.
func literalSchema(x *executor, tool string, skip []string) (*schema.Schema, error) {
	s, err := ojson.Parse(x.build.shape(tool).check)
	if err != nil {
		return nil, fmt.Errorf("tool schema: %w", err)
	}
	if len(skip) > 0 {
		var required []string
		if r := s.Get("required"); r != nil {
			if err := json.Unmarshal(r, &required); err != nil {
				return nil, fmt.Errorf("tool schema: required: %w", err)
			}
		}
		required = slices.DeleteFunc(required, func(k string) bool { return slices.Contains(skip, k) })
		rb, _ := json.Marshal(required)
		s.Set("required", rb)
	}
	compiled, err := x.reg.compile(s.Bytes())
	if err != nil {
		return nil, fmt.Errorf("tool schema: %w", err)
	}
	return compiled, nil
}

// unsatisfied returns the first reference of the first alternative of rd
// that nothing can satisfy, when no alternative can be satisfied whole. A
// scoped call's reference outside its scopes is never satisfied.
func (g *planGraph) unsatisfied(n *planNode, rd planRead, src ref.Source, scopes scopeSet, scoped bool) (ref.Ref, bool) {
	var first *ref.Ref
alts:
	for _, alt := range rd.expr.Alts {
		for _, x := range alt {
			if scoped && !scopes.holds(x.Kind, x.Path) || !g.satisfiable(n, rd.param, x, src) {
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
// tool naming an activity that is not registered, and a latent call or a
// delegate's that needs the model when there is no provider.
func (g *planGraph) executable(x *executor) {
	for _, n := range g.nodes {
		sh := x.build.shape(n.call.Tool)
		if sh == nil {
			continue // reported as an unknown tool
		}
		a, _, err := x.reg.resolveActivity(n.call.Tool, sh.def)
		switch {
		case err != nil:
			g.add(n, PlanProblem{Err: err})
		case sh.delegate != "" && x.cfg.Provider == nil:
			// A delegate runs before an activity or an inline _output
			// would be looked at (see executor.invoke).
			g.add(n, PlanProblem{Err: fmt.Errorf("%w: the tool is a delegate, whose sub-run asks the model", ErrNoProvider)})
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
