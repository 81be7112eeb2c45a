package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
)

// ErrUnknownAdvisor reports an advisor message naming no registered
// advisor.
var ErrUnknownAdvisor = errors.New("agent: unknown advisor")

// registeredAdvisor is an advisor of the registry (801).
type registeredAdvisor struct {
	def    message.Advisor
	schema json.RawMessage
}

// Advisor registers an advisor (017, 801) under a.ID, with the schema of
// its advice (nil for none beyond its votes). A context names it with
// {"type":"advisor","advisor":"<id>"}, which may set when it speaks (on)
// and what it focuses on (scopes) for that context; the rest is the
// registered definition. A duplicate or empty id, or a schema that is not
// a JSON object, panics.
func (r *Registry) Advisor(a message.Advisor, schema json.RawMessage) {
	if a.ID == "" {
		panic("agent: Advisor with an empty ID")
	}
	if len(schema) > 0 && !isObject(schema) {
		panic(fmt.Sprintf("agent: advisor %q: schema must be a JSON object", a.ID))
	}
	a.Name = ""
	a.Scopes = slices.Clone(a.Scopes)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.advisors == nil {
		r.advisors = map[string]registeredAdvisor{}
	}
	if _, ok := r.advisors[a.ID]; ok {
		panic(fmt.Sprintf("agent: advisor %q is already registered", a.ID))
	}
	r.advisors[a.ID] = registeredAdvisor{a, bytes.Clone(schema)}
}

// lookupAdvisor returns the definition and schema of the registered
// advisor that ref names, with ref's on and scopes when it sets them.
func (r *Registry) lookupAdvisor(ref *message.Advisor) (*message.Advisor, json.RawMessage, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reg, ok := r.advisors[ref.Name]
	if !ok {
		known := "no advisor is registered"
		if len(r.advisors) > 0 {
			known = "advisors: " + strings.Join(slices.Sorted(maps.Keys(r.advisors)), ", ")
		}
		return nil, nil, fmt.Errorf("%w %q (%s)", ErrUnknownAdvisor, ref.Name, known)
	}
	a := reg.def
	if ref.On != "" {
		a.On = ref.On
	}
	if ref.Scopes != nil {
		a.Scopes = ref.Scopes
	}
	return &a, reg.schema, nil
}

// isObject reports whether s is a JSON object.
func isObject(s json.RawMessage) bool {
	var o map[string]json.RawMessage
	return json.Unmarshal(s, &o) == nil && o != nil
}

// ConsultAdvisor is the meta-tool through which the model asks an
// on-demand advisor (017) for advice.
const ConsultAdvisor = "ConsultAdvisor"

// renderAdvisor registers an advisor (017) and renders its role. Those
// that speak in the solution (on start, request or finish) join the
// advisors property, which comes before calls: the model deliberates in
// their voices first. Which of them speak at a step is decided when the
// schema is composed (Build.advisorsProperty), so the text says when the
// advisor speaks, not whether it speaks now: it reads the same at every
// step, and the prompt cache behind it stays. On-demand advisors are
// reached through the ConsultAdvisor tool.
func renderAdvisor(_ context.Context, b *Build, m *message.Message) error {
	a, s, err := b.advisorOf(m)
	if err != nil {
		return err
	}
	if why := entryProblem(s); why != "" {
		return fmt.Errorf("advisor %q: schema: %s", a.ID, why)
	}
	// The entry goes inside the composed schema (or ConsultAdvisor's
	// _output), where "#" is no longer the root of s: its definitions
	// come apart, named after the advisor, for the root's "$defs".
	body, defs, err := schema.Embed(s, "advisor."+a.ID, b.defNames(""))
	if err != nil {
		return fmt.Errorf("advisor %q: %w", a.ID, err)
	}
	d := advisorDef{a: a, schema: schema.Deref(body, defs), defs: defs}
	if _, err := advisorItem(a, d.schema, nil, false); err != nil {
		return fmt.Errorf("advisor %q: %w", a.ID, err)
	}
	b.Render(provider.RoleUser, b.advisorNotes.text(a))
	if onDemand(a) {
		// An advisor declared again is offered as declared last.
		b.advisorsOnDemand = slices.DeleteFunc(b.advisorsOnDemand, func(d advisorDef) bool { return d.a.ID == a.ID })
		b.advisorsOnDemand = append(b.advisorsOnDemand, d)
		b.defineConsult()
		return nil
	}
	b.advisors = append(b.advisors, d)
	b.changed = true
	return nil
}

// entryOwn are the properties of an advisor's entry that are not its
// schema's to define, and what they hold.
var entryOwn = [...]struct{ name, holds string }{
	{"id", "the advisor's id"}, {"calls", "its votes for tools"}, {"_instance", "the instance it speaks for"},
}

// entryProblem says why an advisor's schema cannot be the rest of its
// entry, or returns "": the entry is an object, so a schema of another
// type would lose what it asks for, and the entry's own properties
// would replace those the schema names alike.
func entryProblem(s json.RawMessage) string {
	if len(s) == 0 {
		return ""
	}
	var d struct {
		Type       json.RawMessage            `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(s, &d) != nil {
		return "" // the message's own checks report it
	}
	if d.Type != nil {
		if types, _ := typesOf(d.Type); !slices.Contains(types, "object") {
			return "an advisor's entry is an object, and this schema is of type " + compact(d.Type)
		}
	}
	for _, p := range entryOwn {
		if _, ok := d.Properties[p.name]; ok {
			return fmt.Sprintf("property %q is the entry's own (%s); name it otherwise", p.name, p.holds)
		}
	}
	return ""
}

// advisorOf returns the advisor message m defines, or the registered one
// it names.
func (b *Build) advisorOf(m *message.Message) (*message.Advisor, json.RawMessage, error) {
	if m.Advisor.Name != "" {
		return b.Registry.lookupAdvisor(m.Advisor)
	}
	return m.Advisor, m.Schema, nil
}

// onDemand reports whether a speaks only when consulted.
func onDemand(a *message.Advisor) bool { return a.On == "" || a.On == "demand" }

// advisorNotes is what the advisor blocks rendered so far said for every
// advisor: how to give votes, and how to consult one on demand. Each is
// said with the first advisor it applies to and not again, as it is the
// same for all (it took about 140 bytes an advisor); what a block says
// depends only on the blocks before it, so it renders the same at every
// step.
type advisorNotes struct{ votes, consult bool }

// text is how the model sees advisor a: its role, what it focuses on,
// and when it gives its opinion.
func (ad *advisorNotes) text(a *message.Advisor) string {
	var desc strings.Builder
	fmt.Fprintf(&desc, "## Advisor: %s\n%s\n", a.ID, a.Role)
	if len(a.Scopes) > 0 {
		fmt.Fprintf(&desc, "Focus on: %s\n", strings.Join(a.Scopes, ", "))
	}
	var when string
	switch a.On {
	case "start":
		when = "at the first step"
	case "request":
		when = "at every step"
	case "finish":
		when = "at every step after the first, as you decide whether to stop"
	default:
		if ad.consult {
			desc.WriteString("Consult it on demand.")
		} else {
			desc.WriteString("Consult this advisor with the " + ConsultAdvisor + " tool when you need its view.")
		}
		ad.consult = true
		return desc.String()
	}
	if ad.votes {
		desc.WriteString("Give its opinion in advisors " + when + ", before any call.")
	} else {
		desc.WriteString("Give its opinion in advisors " + when + ", before any call; put its votes for tools in calls as inline JSON, e.g. {\"deploy\": 10, \"delay\": 90}.")
	}
	ad.votes = true
	return desc.String()
}

// advisorDef is an advisor that speaks in the solution, and the schema of
// its advice, whose refs point to defs at the root of the schema that
// holds it.
type advisorDef struct {
	a      *message.Advisor
	schema json.RawMessage
	defs   []schema.Def
}

// advisorsProperty returns the schema of the solution's advisors: the
// entries of those that speak at this step (start advisors while the log
// has no plan yet, finish advisors once it has one, request advisors
// always), or nil when none does, and the definitions they refer to. An
// instanced advisor's _instance names one of the instances handled so
// far, as a call's does.
func (b *Build) advisorsProperty() (json.RawMessage, []schema.Def, error) {
	var items []json.RawMessage
	var defs []schema.Def
	for _, d := range b.advisors {
		if d.a.On == "start" && b.planned || d.a.On == "finish" && !b.planned {
			continue
		}
		item, err := advisorItem(d.a, d.schema, b.instances, b.instancesOpen)
		if err != nil {
			return nil, nil, fmt.Errorf("advisor %q: %w", d.a.ID, err)
		}
		items = append(items, item)
		defs = addDefs(defs, d.defs)
	}
	if items == nil {
		return nil, nil, nil
	}
	return advisorsSchema(items), defs, nil
}

// addDefs appends to defs those of more it does not hold yet by name: an
// advisor declared twice brings its definitions twice.
func addDefs(defs, more []schema.Def) []schema.Def {
	for _, d := range more {
		if !slices.ContainsFunc(defs, func(e schema.Def) bool { return e.Name == d.Name }) {
			defs = append(defs, d)
		}
	}
	return defs
}

// advisorItem is the schema of one advisor's entry: its id, what its
// schema asks for, and its votes. Its _instance, for an instanced
// advisor, is an enum of instances, or any string when open, as a call's.
func advisorItem(a *message.Advisor, s json.RawMessage, instances []string, open bool) (json.RawMessage, error) {
	o := &ojson.Object{}
	if len(s) > 0 && s[0] == '{' {
		var err error
		if o, err = ojson.Parse(s); err != nil {
			return nil, err
		}
	}
	props := &ojson.Object{}
	if p := o.Get("properties"); p != nil {
		var err error
		if props, err = ojson.Parse(p); err != nil {
			return nil, err
		}
	}
	props.SetFirst("id", json.RawMessage(`{"const":`+string(ojson.Quote(a.ID))+`}`))
	req := []string{"id", "calls"}
	if a.IsInstanced {
		if open || len(instances) == 0 {
			props.Set("_instance", json.RawMessage(`{"type":"string","description":"The instance the opinion is about: an _instance of the data."}`))
		} else {
			enum, _ := json.Marshal(instances)
			props.Set("_instance", json.RawMessage(`{"enum":`+string(enum)+`}`))
		}
		req = append(req, "_instance")
	}
	props.Set("calls", json.RawMessage(`{"type":"string","description":"Votes for tools as inline JSON: tool name to weight."}`))
	var own []string
	if r := o.Get("required"); r != nil {
		_ = json.Unmarshal(r, &own)
	}
	rb, _ := json.Marshal(append(own, req...))
	o.Set("type", json.RawMessage(`"object"`))
	o.Set("properties", props.Bytes())
	o.Set("required", rb)
	return o.Bytes(), nil
}

func advisorsSchema(items []json.RawMessage) json.RawMessage {
	var s strings.Builder
	s.WriteString(`{"type":"array","description":"The advisors' opinions, before any call.","items":`)
	if len(items) == 1 {
		s.Write(items[0])
	} else {
		s.WriteString(`{"anyOf":[`)
		for i, it := range items {
			if i > 0 {
				s.WriteByte(',')
			}
			s.Write(it)
		}
		s.WriteString(`]}`)
	}
	s.WriteString(`}`)
	return json.RawMessage(s.String())
}

// defineConsult (re)defines the ConsultAdvisor tool for the on-demand
// advisors seen so far. It is latent: the model answers as the advisor.
// The advisors' roles are in their own messages, which every request
// shows; the description named them again, and each request repeated
// every role twice. The latent request that answers a consultation, which
// shows neither, says the role of the advisor asked (consultRole).
func (b *Build) defineConsult() {
	ids := make([]string, len(b.advisorsOnDemand))
	for i, d := range b.advisorsOnDemand {
		ids[i] = d.a.ID
	}
	enum, _ := json.Marshal(ids)
	var defs []schema.Def
	if ownSchemas(b.advisorsOnDemand) {
		for _, d := range b.advisorsOnDemand {
			defs = addDefs(defs, d.defs)
		}
	}
	def := json.RawMessage(`{"type":"object","description":"Ask an on-demand advisor of the context (## Advisor) for its opinion, given in its voice.","properties":{` +
		`"advisor":{"enum":` + string(enum) + `},"question":{"type":"string"},` +
		`"_output":` + string(consultOutput(b.advisorsOnDemand)) + `},` +
		`"required":["advisor","question"]}`)
	def = withDefs(def, defs) // the entries' refs point to the tool's root
	_ = defineTool(b, ConsultAdvisor, def)
}

// consultRole returns what a consultation's latent request says of the
// on-demand advisor id: its role, and its focus; "" for none.
func (b *Build) consultRole(id string) string {
	for _, d := range slices.Backward(b.advisorsOnDemand) {
		if d.a.ID == id {
			role := "The advisor " + id + ": " + d.a.Role
			if len(d.a.Scopes) > 0 {
				role += " (focus on: " + strings.Join(d.a.Scopes, ", ") + ")"
			}
			return role
		}
	}
	return ""
}

// opinionSchema is what a consultation answers when no on-demand advisor
// has a schema of its own.
const opinionSchema = `{"type":"object","properties":{"opinion":{"type":"string"},"calls":{"type":"string","description":"Votes for tools as inline JSON."}},"required":["opinion"]}`

// consultOutput is ConsultAdvisor's _output. Once an on-demand advisor
// has a schema of its own (017), a consultation answers as that
// advisor's entry in a solution would: its id, what its schema asks for
// (an opinion when it has none) and its votes, one such entry per
// advisor. renderAdvisor checked that each makes an entry.
func consultOutput(advisors []advisorDef) json.RawMessage {
	if !ownSchemas(advisors) {
		return json.RawMessage(opinionSchema)
	}
	items := make([]string, len(advisors))
	for i, d := range advisors {
		items[i] = string(consultItem(d))
	}
	if len(items) == 1 {
		return json.RawMessage(items[0])
	}
	return json.RawMessage(`{"anyOf":[` + strings.Join(items, ",") + `]}`)
}

// ownSchemas reports whether an advisor of advisors has a schema of its
// own, which makes consultations answer with entries (consultOutput).
func ownSchemas(advisors []advisorDef) bool {
	return slices.ContainsFunc(advisors, func(d advisorDef) bool { return len(d.schema) > 0 })
}

// consultItem is advisor d's entry in consultOutput.
func consultItem(d advisorDef) json.RawMessage {
	s := d.schema
	if len(s) == 0 {
		s = json.RawMessage(`{"type":"object","properties":{"opinion":{"type":"string"}},"required":["opinion"]}`)
	}
	// The call's own _instance says which instance a consultation is
	// about: its answer names none.
	a := *d.a
	a.IsInstanced = false
	item, _ := advisorItem(&a, s, nil, false)
	return item
}

// consultAnswer is advisor d's entry standing on its own, its
// definitions with it: what a consultation of d is asked to produce.
func consultAnswer(d advisorDef) json.RawMessage {
	return withDefs(consultItem(d), d.defs)
}

// consultation returns the advisor a ConsultAdvisor call asks, and what
// its answer must be: that advisor's entry alone, since an answer that
// is another's fits consultOutput's anyOf too. answer is nil when the
// consultation answers the plain opinion, or names no on-demand advisor.
func (b *Build) consultation(args json.RawMessage) (id string, answer json.RawMessage) {
	var c struct {
		Advisor string `json:"advisor"`
	}
	_ = json.Unmarshal(args, &c)
	if !ownSchemas(b.advisorsOnDemand) {
		return c.Advisor, nil
	}
	for _, d := range slices.Backward(b.advisorsOnDemand) {
		if d.a.ID == c.Advisor {
			return c.Advisor, consultAnswer(d)
		}
	}
	return c.Advisor, nil
}

// answeredAs returns the id an advisor's entry gives, if any.
func answeredAs(entry json.RawMessage) (string, bool) {
	var e struct {
		ID *string `json:"id"`
	}
	if json.Unmarshal(entry, &e) != nil || e.ID == nil {
		return "", false
	}
	return *e.ID, true
}

// Opinion is one advisor's entry in a solution.
type Opinion struct {
	ID       string
	Instance string
	// Votes are the weights the advisor gave tools.
	Votes map[string]float64
	// Raw is the whole entry.
	Raw json.RawMessage
}

// Opinions reads the advisors' entries of a solution and their votes. A
// vote string that is not a JSON object of numbers is an error naming the
// advisor.
func (s *Solution) Opinions() ([]Opinion, error) { return opinionsOf(s.Field("advisors")) }

// opinionsOf reads the advisors property raw.
func opinionsOf(raw json.RawMessage) ([]Opinion, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, errorf("agent: advisors: %w", err)
	}
	out := make([]Opinion, 0, len(entries))
	for i, e := range entries {
		var v struct {
			ID       string `json:"id"`
			Instance string `json:"_instance"`
			Calls    string `json:"calls"`
		}
		if err := json.Unmarshal(e, &v); err != nil {
			return nil, errorf("agent: advisors/%d: %w", i, err)
		}
		op := Opinion{ID: v.ID, Instance: v.Instance, Raw: bytes.Clone(e), Votes: map[string]float64{}}
		if v.Calls != "" {
			if err := json.Unmarshal([]byte(v.Calls), &op.Votes); err != nil {
				return nil, errorf("agent: advisor %q: votes %q are not a JSON object of numbers: %w", v.ID, v.Calls, err)
			}
		}
		out = append(out, op)
	}
	return out, nil
}

// cloneOpinions returns a copy of ops that shares no memory with it.
func cloneOpinions(ops []Opinion) []Opinion {
	out := make([]Opinion, len(ops))
	for i, op := range ops {
		out[i] = Opinion{ID: op.ID, Instance: op.Instance, Votes: maps.Clone(op.Votes), Raw: bytes.Clone(op.Raw)}
	}
	return out
}

// Tally weighs the advisors' votes: each tool's share of all votes, summed
// over advisors that each count once (their votes normalised to 1), so a
// loud advisor does not outweigh the council. A tool voted 0 (or less) is
// in the tally with no share: the advisors weighed it and rejected it. An
// advisor whose votes are all 0 abstains.
func Tally(ops []Opinion) map[string]float64 {
	t := map[string]float64{}
	n := 0
	for _, op := range ops {
		sum := 0.0
		for _, w := range op.Votes {
			if w > 0 {
				sum += w
			}
		}
		if sum == 0 {
			continue
		}
		n++
		for _, tool := range slices.Sorted(maps.Keys(op.Votes)) {
			t[tool] += max(op.Votes[tool], 0) / sum
		}
	}
	for k := range t {
		t[k] /= float64(n)
	}
	return t
}

// DefaultVeto is Config.Veto when it is 0: a call is refused when the
// advisors gave its tool less than half the share of their favourite.
const DefaultVeto = 0.5

// veto returns why the advisors refuse call c, or "" when they let it
// run. The tally is the resolution of the step (017): the advisors of
// the call's instance, and those that speak for all instances, weigh the
// tools; a tool they voted on whose share is below Config.Veto times the
// favourite's is refused, and the model reads why on its next step. A
// tool no advisor voted on runs: the council abstained.
func (x *executor) veto(c *Call) string {
	ratio := x.cfg.Veto
	switch {
	case len(x.council) == 0 || ratio < 0:
		return ""
	case ratio == 0:
		ratio = DefaultVeto
	}
	var ops []Opinion
	for _, op := range x.council {
		if op.Instance == "" || op.Instance == c.Instance {
			ops = append(ops, op)
		}
	}
	t := Tally(ops)
	share, voted := t[c.Tool]
	if !voted {
		return ""
	}
	fav, top := "", 0.0
	for _, tool := range slices.Sorted(maps.Keys(t)) {
		if t[tool] > top {
			fav, top = tool, t[tool]
		}
	}
	if share >= ratio*top {
		return ""
	}
	return fmt.Sprintf("the advisors voted against %s: %.0f%% of their votes, against %.0f%% for %s", c.Tool, 100*share, 100*top, fav)
}
