package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
)

func TestAdvisors(t *testing.T) {
	// Page 017: a riskAnalyst on every request votes before the calls; an
	// on-demand advisor is reached through ConsultAdvisor.
	reg := agent.NewRegistry()
	for _, n := range []string{"deploy", "rollback", "delay"} {
		reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		reg.Activity(n, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
		}))
	}
	p := scripted.Solutions(`{"advisors":[{"id":"riskAnalyst","thought":"The new feature has passed unit tests but lacks integration tests. High risk of regression.","calls":"{\"deploy\": 10, \"rollback\": 5, \"delay\": 95}"}],
		"calls":[{"_tool":"delay","_reasoningForCall":"RiskAnalyst strongly advises delaying due to insufficient testing.","_outputPath":"†state.decision"}],"output":{"status":"delayed"}}`)
	var ops []agent.Opinion
	var res *agent.RunResult
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[
		{"type":"tool","tool":"deploy"},{"type":"tool","tool":"rollback"},{"type":"tool","tool":"delay"},
		{"type":"state","deploymentHistory":[{"version":"v1","ok":true}]},
		{"type":"advisor","id":"riskAnalyst","on":"request","scopes":["†state.deploymentHistory"],"role":"Analyze risks and Vote for deployment actions.",
		 "schema":{"type":"object","properties":{"thought":{"type":"string","description":"Risk assessment of the deployment."}},"required":["thought"]}},
		{"type":"advisor","id":"securityArchitect","role":"Review security."}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventAdvice {
			ops = ev.Opinions
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	if len(ops) != 1 || ops[0].ID != "riskAnalyst" || ops[0].Votes["delay"] != 95 {
		t.Fatalf("opinions %+v", ops)
	}
	if res == nil || len(res.Advice) != 1 || res.Advice[0].Votes["deploy"] != 10 {
		t.Errorf("the result does not carry the advice: %+v", res)
	}
	tally := agent.Tally(ops)
	if math.Abs(tally["delay"]-95.0/110) > 1e-9 {
		t.Errorf("tally %v", tally)
	}
	sent := p.Requests()[0]
	schema := string(sent.Schema)
	if i, j := strings.Index(schema, `"advisors"`), strings.Index(schema, `"calls"`); i < 0 || j < 0 || i > j {
		t.Errorf("advisors must come before calls in the schema: %s", schema)
	}
	if !strings.Contains(schema, `"riskAnalyst"`) || strings.Contains(schema, `{"const":"securityArchitect"}`) || !strings.Contains(schema, `"ConsultAdvisor"`) {
		t.Errorf("schema: %s", schema)
	}
	var text strings.Builder
	for _, m := range sent.Messages {
		text.WriteString(m.Text + "\n")
	}
	if !strings.Contains(text.String(), "## Advisor: riskAnalyst") || !strings.Contains(text.String(), "Focus on: †state.deploymentHistory") ||
		!strings.Contains(text.String(), "Consult this advisor with the ConsultAdvisor tool") {
		t.Errorf("rendered:\n%s", text.String())
	}
}

func TestAdvisorPhasesAndInstances(t *testing.T) {
	ctx := `[{"type":"state","_instance":"①","x":1},{"type":"state","_instance":"②","x":2},
		{"type":"advisor","id":"opener","on":"start","role":"Sets direction."},
		{"type":"advisor","id":"closer","on":"finish","role":"Decides when to stop."},
		{"type":"advisor","id":"perItem","on":"request","isInstanced":true,"role":"Judges each item."}]`
	p := scripted.Solutions(`{"advisors":[{"id":"opener","calls":"{}"},{"id":"perItem","_instance":"①","calls":"{\"a\":1}"},{"id":"perItem","_instance":"②","calls":"{\"b\":1}"}],"output":1}`)
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{}`), ctxOf(t, ctx))
	if err != nil {
		t.Fatal(err)
	}
	schema := string(p.Requests()[0].Schema)
	if !strings.Contains(schema, `"opener"`) || strings.Contains(schema, `"closer"`) || !strings.Contains(schema, `"enum":["①","②"]`) {
		t.Errorf("first step schema: %s", schema)
	}
	ops, err := resp.Solutions[0].Opinions()
	if err != nil || len(ops) != 3 || ops[2].Instance != "②" {
		t.Errorf("opinions %+v %v", ops, err)
	}
	// After a step (a plan in the context) the finish advisor speaks and
	// the start one is quiet.
	p2 := scripted.Solutions(`{"advisors":[{"id":"closer","calls":"{}"},{"id":"perItem","_instance":"①","calls":"{}"}],"output":1}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p2, Registry: agent.NewRegistry()}, json.RawMessage(`{}`),
		ctxOf(t, strings.Replace(ctx, `[{"type":"state"`, `[{"type":"plan","plan":[]},{"type":"state"`, 1))); err != nil {
		t.Fatal(err)
	}
	schema = string(p2.Requests()[0].Schema)
	if strings.Contains(schema, `"opener"`) || !strings.Contains(schema, `"closer"`) {
		t.Errorf("later step schema: %s", schema)
	}
	bad := agent.Solution{Raw: json.RawMessage(`{"advisors":[{"id":"x","calls":"not json"}]}`)}
	if _, err := bad.Opinions(); err == nil || !strings.Contains(err.Error(), `advisor "x"`) {
		t.Errorf("bad votes: %v", err)
	}
}

// TestAdvisorInstancedWithoutInstances: an instanced advisor in a
// context with no instances yet takes any _instance, as a call does once
// instances come mid-run; an enum of none would be no schema at all.
func TestAdvisorInstancedWithoutInstances(t *testing.T) {
	p := scripted.Solutions(`{"advisors":[{"id":"perItem","_instance":"a","calls":"{}"}],"output":1}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{}`),
		ctxOf(t, `[{"type":"advisor","id":"perItem","on":"request","isInstanced":true,"role":"Judges each item."}]`)); err != nil {
		t.Fatal(err)
	}
	if schema := string(p.Requests()[0].Schema); !strings.Contains(schema, `"_instance":{"type":"string"`) || strings.Contains(schema, `"enum":null`) {
		t.Errorf("schema: %s", schema)
	}
}

// councilRun runs a loop over tools deploy, rollback and delay, whose
// first answer streams in chunks; it returns the tools that ran, the
// error messages of the run and its advice events.
func councilRun(t *testing.T, cfg agent.Config, extra string, chunks ...string) (ran []string, errs []string, advice [][]agent.Opinion) {
	t.Helper()
	reg := cfg.Registry
	if reg == nil {
		reg = agent.NewRegistry()
		cfg.Registry = reg
	}
	var mu sync.Mutex
	for _, n := range []string{"deploy", "rollback", "delay"} {
		reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		reg.Activity(n, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, n+c.Instance)
			return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
		}))
	}
	cfg.Provider = scripted.New(scripted.Response{Chunks: chunks}, scripted.Response{Solutions: []string{`{"advisors":[],"calls":[],"output":"done"}`}})
	tools := `{"type":"tool","tool":"deploy"},{"type":"tool","tool":"rollback"},{"type":"tool","tool":"delay"},`
	for ev, err := range agent.Events(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[`+tools+extra+`]`)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case agent.EventAdvice:
			advice = append(advice, ev.Opinions)
		case agent.EventMessage:
			if ev.Message.Type == message.TypeError {
				errs = append(errs, ev.Message.Error)
			}
		}
	}
	slices.Sort(ran)
	return ran, errs, advice
}

const riskAnalyst = `{"type":"advisor","id":"riskAnalyst","on":"request","scopes":["†state.deploymentHistory"],"role":"Analyze risks and Vote for deployment actions.",
	"schema":{"type":"object","properties":{"thought":{"type":"string","description":"Risk assessment of the deployment."}},"required":["thought"]}}`

// The page's vote: deploy 10, rollback 5, delay 95.
const riskVotes = `"advisors":[{"id":"riskAnalyst","thought":"The new feature lacks integration tests. High risk of regression.","calls":"{\"deploy\": 10, \"rollback\": 5, \"delay\": 95}"}]`

func TestAdvisorsVeto(t *testing.T) {
	// Page 017: the model, against its council, calls deploy as well as
	// delay: the tally resolves the step, and only delay runs.
	ran, errs, advice := councilRun(t, agent.Config{}, riskAnalyst,
		`{`+riskVotes[:40], riskVotes[40:]+`,"calls":[{"_tool":"deploy",`, `"_reasoningForCall":"ship it"},`,
		`{"_tool":"delay","_reasoningForCall":"RiskAnalyst strongly advises delaying due to insufficient testing."}],"output":null}`)
	if !slices.Equal(ran, []string{"delay"}) {
		t.Errorf("ran %v, want delay only", ran)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "the advisors voted against deploy: 9% of their votes, against 86% for delay") {
		t.Errorf("errors %q", errs)
	}
	if len(advice) != 1 || advice[0][0].Votes["delay"] != 95 {
		t.Errorf("advice events %+v", advice)
	}
}

func TestAdvisorsEventOpinionsAreCopies(t *testing.T) {
	// The advice event comes before the step's calls run: a consumer that
	// changes its opinions must not change the tally that weighs them, nor
	// the run's result.
	reg := agent.NewRegistry()
	var ran []string
	for _, n := range []string{"deploy", "delay"} {
		reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		reg.Activity(n, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			ran = append(ran, n)
			return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
		}))
	}
	p := scripted.New(scripted.Response{Solutions: []string{`{` + riskVotes + `,"calls":[{"_tool":"deploy"}],"output":null}`}},
		scripted.Response{Solutions: []string{`{"advisors":[],"calls":[],"output":"done"}`}})
	cfg := agent.Config{Provider: p, Registry: reg, Concurrency: 1}
	msgs := ctxOf(t, `[{"type":"tool","tool":"deploy"},{"type":"tool","tool":"delay"},`+riskAnalyst+`]`)
	res, err := agent.Collect(func(yield func(agent.RunEvent, error) bool) {
		for ev, err := range agent.Events(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), msgs) {
			for _, op := range ev.Opinions {
				op.Votes["deploy"] = 1000
				op.Raw[0] = 'x'
			}
			if !yield(ev, err) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ran) != 0 {
		t.Errorf("ran %v: the consumer's change to the advice event outvoted the council", ran)
	}
	if len(res.Advice) != 1 || res.Advice[0].Votes["deploy"] != 10 || res.Advice[0].Raw[0] != '{' {
		t.Errorf("result advice %+v, want the advisors' own", res.Advice)
	}
}

func TestAdvisorsVetoOff(t *testing.T) {
	ran, errs, _ := councilRun(t, agent.Config{Veto: -1}, riskAnalyst,
		`{`+riskVotes+`,"calls":[{"_tool":"deploy"},{"_tool":"delay"}],"output":null}`)
	if !slices.Equal(ran, []string{"delay", "deploy"}) || len(errs) != 0 {
		t.Errorf("ran %v, errors %q: with the veto off every call runs", ran, errs)
	}
}

func TestAdvisorsCallsWaitForAdvice(t *testing.T) {
	// A model that writes its calls before the advisors: the calls wait
	// until the advice is in, then the tally resolves them.
	ran, errs, _ := councilRun(t, agent.Config{}, riskAnalyst,
		`{"calls":[{"_tool":"deploy"},{"_tool":"rollback"}],`, riskVotes+`,"output":null}`)
	if len(ran) != 0 || len(errs) != 2 {
		t.Errorf("ran %v, errors %q: both calls are outvoted", ran, errs)
	}
}

func TestAdvisorsAbstainAndBalance(t *testing.T) {
	// Two advisors who disagree carry equal weight, however loud: deploy
	// and delay tie and both run; rollback, which nobody voted on, runs
	// too (the council abstained on it).
	second := `{"type":"advisor","id":"productManager","on":"request","role":"Ship value."}`
	votes := `"advisors":[{"id":"riskAnalyst","thought":"risky","calls":"{\"deploy\": 1, \"delay\": 9}"},{"id":"productManager","calls":"{\"deploy\": 900, \"delay\": 100}"}]`
	ran, errs, _ := councilRun(t, agent.Config{}, riskAnalyst+","+second,
		`{`+votes+`,"calls":[{"_tool":"deploy"},{"_tool":"delay"},{"_tool":"rollback"}],"output":null}`)
	if !slices.Equal(ran, []string{"delay", "deploy", "rollback"}) || len(errs) != 0 {
		t.Errorf("ran %v, errors %q", ran, errs)
	}
}

func TestAdvisorsInstancedVeto(t *testing.T) {
	// An instanced advisor judges each instance on its own: deploy runs
	// for ① and is refused for ②.
	advisor := `{"type":"state","_instance":"①","service":"api"},{"type":"state","_instance":"②","service":"db"},
		{"type":"advisor","id":"perService","on":"request","isInstanced":true,"role":"Judges each service."}`
	votes := `"advisors":[{"id":"perService","_instance":"①","calls":"{\"deploy\": 90, \"delay\": 10}"},{"id":"perService","_instance":"②","calls":"{\"deploy\": 5, \"delay\": 95}"}]`
	ran, errs, _ := councilRun(t, agent.Config{}, advisor,
		`{`+votes+`,"calls":[{"_tool":"deploy","_instance":"①"},{"_tool":"deploy","_instance":"②"}],"output":null}`)
	if !slices.Equal(ran, []string{"deploy①"}) || len(errs) != 1 || !strings.Contains(errs[0], "against deploy") {
		t.Errorf("ran %v, errors %q", ran, errs)
	}
}

func TestRegisteredAdvisor(t *testing.T) {
	// An advisor registered once, named from the context, which sets when
	// it speaks there.
	reg := agent.NewRegistry()
	reg.Advisor(message.Advisor{ID: "riskAnalyst", Role: "Analyze risks and Vote for deployment actions.", Scopes: []string{"†state.deploymentHistory"}},
		json.RawMessage(`{"type":"object","properties":{"thought":{"type":"string"}},"required":["thought"]}`))
	ran, errs, advice := councilRun(t, agent.Config{Registry: reg}, `{"type":"advisor","advisor":"riskAnalyst","on":"request"}`,
		`{`+riskVotes+`,"calls":[{"_tool":"deploy"},{"_tool":"delay"}],"output":null}`)
	if !slices.Equal(ran, []string{"delay"}) || len(errs) != 1 || len(advice) != 1 {
		t.Errorf("ran %v, errors %q, advice %v", ran, errs, advice)
	}

	// What the model is sent: the registered role, scopes and schema.
	p := scripted.Solutions(`{"advisors":[{"id":"riskAnalyst","thought":"fine","calls":"{}"}],"output":1}`)
	if _, err := agent.Request(t.Context(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`),
		ctxOf(t, `[{"type":"advisor","advisor":"riskAnalyst","on":"request","scopes":["†input"]}]`)); err != nil {
		t.Fatal(err)
	}
	sent := p.Requests()[0]
	if s := string(sent.Schema); !strings.Contains(s, `"thought"`) || !strings.Contains(s, `{"const":"riskAnalyst"}`) {
		t.Errorf("schema: %s", s)
	}
	var text strings.Builder
	for _, m := range sent.Messages {
		text.WriteString(m.Text)
	}
	if s := text.String(); !strings.Contains(s, "Analyze risks") || !strings.Contains(s, "Focus on: †input") || strings.Contains(s, "deploymentHistory") {
		t.Errorf("rendered: %s", s)
	}

	// An unknown name is an error that lists the registered advisors.
	_, err := agent.Request(t.Context(), agent.Config{Provider: scripted.Solutions(`{"output":1}`), Registry: reg}, json.RawMessage(`{}`),
		ctxOf(t, `[{"type":"advisor","advisor":"riskAnalist"}]`))
	if !errors.Is(err, agent.ErrUnknownAdvisor) || !strings.Contains(err.Error(), `"riskAnalist" (advisors: riskAnalyst)`) {
		t.Errorf("unknown advisor: %v", err)
	}
}

func TestRegistryAdvisorPanics(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Advisor(message.Advisor{ID: "a"}, nil)
	for name, f := range map[string]func(){
		"duplicate":  func() { reg.Advisor(message.Advisor{ID: "a"}, nil) },
		"empty id":   func() { reg.Advisor(message.Advisor{}, nil) },
		"bad schema": func() { reg.Advisor(message.Advisor{ID: "b"}, json.RawMessage(`[1]`)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestConsultAdvisorKnowsTheRole(t *testing.T) {
	// An on-demand advisor's opinion is produced by a latent request when
	// the model leaves the call's _output out: that request is all the
	// model answering sees, so it names the advisor's role.
	p := scripted.Solutions(
		`{"calls":[{"_tool":"ConsultAdvisor","advisor":"securityArchitect","question":"Is the token logged?","_outputPath":"†state.advice"}],"output":null}`,
		`{"output":{"opinion":"Yes, in the debug log.","calls":"{}"}}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[
		{"type":"advisor","id":"securityArchitect","role":"Review security: secrets, authentication, injection."},
		{"type":"advisor","id":"costAnalyst","role":"Weigh the cost of each option."}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.advice.opinion"); got != `"Yes, in the debug log."` {
		t.Errorf("advice = %s", got)
	}
	var text strings.Builder
	for _, m := range p.Requests()[1].Messages {
		text.WriteString(m.Text + "\n")
	}
	if want := "The advisor securityArchitect: Review security: secrets, authentication, injection."; !strings.Contains(text.String(), want) {
		t.Errorf("the consultation does not say %q:\n%s", want, text.String())
	}
	// The loop's requests say each role once, in the advisor's message:
	// ConsultAdvisor's description said them all again.
	first := sentBytes(p.Requests()[0])
	for _, role := range []string{"Review security: secrets, authentication, injection.", "Weigh the cost of each option."} {
		if n := strings.Count(first, role); n != 1 {
			t.Errorf("the first request says %q %d times, want once", role, n)
		}
	}
}

func TestConsultAdvisorOwnSchema(t *testing.T) {
	// An on-demand advisor's schema says what its advice holds (017): a
	// consultation answers with it, as the advisor's entry in a solution
	// would, and an answer without it is repaired. An advisor without a
	// schema still gives an opinion.
	p := scripted.Solutions(
		`{"calls":[{"_tool":"ConsultAdvisor","advisor":"riskAnalyst","question":"Deploy now?","_outputPath":"†state.risk"}],"output":null}`,
		`{"output":{"opinion":"Looks fine."}}`, // not what riskAnalyst's schema asks
		`{"output":{"id":"riskAnalyst","risk":0.7,"calls":"{\"delay\":90}"}}`,
		`{"calls":[{"_tool":"ConsultAdvisor","advisor":"costAnalyst","question":"Cost?","_outputPath":"†state.cost"}],"output":null}`,
		`{"output":{"id":"costAnalyst","opinion":"Cheap.","calls":"{}"}}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[
		{"type":"advisor","id":"riskAnalyst","role":"Rate the risk of a deployment.",
			"schema":{"type":"object","properties":{"risk":{"type":"number","minimum":0,"maximum":1}},"required":["risk"]}},
		{"type":"advisor","id":"costAnalyst","role":"Weigh the cost of each option."}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.risk.risk"); got != `0.7` {
		t.Errorf("risk = %s", got)
	}
	if got := lookup(t, res.Log, "†state.cost.opinion"); got != `"Cheap."` {
		t.Errorf("cost opinion = %s", got)
	}
	if n := len(p.Requests()); n != 6 {
		t.Errorf("%d requests, want 6 (one repair)", n)
	}
}

func TestConsultAdvisorOwnDefinitions(t *testing.T) {
	// An on-demand advisor's schema with definitions of its own: the
	// latent request of a consultation asks for its entry with them, and
	// an answer that breaks them is repaired.
	p := scripted.Solutions(
		`{"calls":[{"_tool":"ConsultAdvisor","advisor":"security","question":"Safe?","_outputPath":"†state.review"}],"output":null}`,
		`{"output":{"id":"security","findings":[{"where":"port 22"}],"calls":"{}"}}`, // a finding says what
		`{"output":{"id":"security","findings":[{"what":"an open port"}],"calls":"{}"}}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[
		{"type":"advisor","id":"security","role":"Review security.",
		 "schema":{"type":"object","$defs":{"Finding":{"type":"object","properties":{"what":{"type":"string"}},"required":["what"]}},
		  "properties":{"findings":{"type":"array","items":{"$ref":"#/$defs/Finding"}}},"required":["findings"]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.review.findings"); got != `[{"what":"an open port"}]` {
		t.Errorf("findings = %s", got)
	}
	reqs := p.Requests()
	if n := len(reqs); n != 4 {
		t.Fatalf("%d requests, want 4 (one repair)", n)
	}
	if s := string(reqs[1].Schema); !strings.Contains(s, `"required":["what"]`) {
		t.Errorf("the consultation's schema lacks the advisor's definition: %s", s)
	}
}

func TestConsultAdvisorAnswersAsTheOneAsked(t *testing.T) {
	// A consultation asks one advisor: an answer that is another on-demand
	// advisor's entry fits ConsultAdvisor's _output, yet is not the advice
	// asked for. A latent answer so is repaired, and an inline one is an
	// error the model sees.
	const advisors = `[{"type":"advisor","id":"riskAnalyst","role":"Rate the risk of a deployment.",
			"schema":{"type":"object","properties":{"risk":{"type":"number"}},"required":["risk"]}},
		{"type":"advisor","id":"costAnalyst","role":"Weigh the cost of each option."}]`
	t.Run("latent", func(t *testing.T) {
		p := scripted.Solutions(
			`{"calls":[{"_tool":"ConsultAdvisor","advisor":"riskAnalyst","question":"Deploy now?","_outputPath":"†state.risk"}],"output":null}`,
			`{"output":{"id":"costAnalyst","opinion":"Cheap.","calls":"{}"}}`,
			`{"output":{"id":"riskAnalyst","risk":0.7,"calls":"{}"}}`,
			`{"calls":[],"output":"done"}`,
		)
		res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, advisors))
		if err != nil {
			t.Fatal(err)
		}
		if got := lookup(t, res.Log, "†state.risk"); got != `{"calls":"{}","id":"riskAnalyst","risk":0.7}` {
			t.Errorf("risk = %s", got)
		}
	})
	t.Run("inline", func(t *testing.T) {
		p := scripted.Solutions(
			`{"calls":[{"_tool":"ConsultAdvisor","advisor":"riskAnalyst","question":"Deploy now?","_outputPath":"†state.risk",
				"_output":{"id":"costAnalyst","opinion":"Cheap.","calls":"{}"}}],"output":null}`,
			`{"calls":[],"output":"done"}`,
		)
		res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, advisors))
		if err != nil {
			t.Fatal(err)
		}
		errs := errorTexts(res.Log)
		want := []string{`structural error in ConsultAdvisor: the call asks advisor "riskAnalyst", and its _output is the entry of "costAnalyst"`}
		if !slices.Equal(errs, want) {
			t.Errorf("errors %q, want %q", errs, want)
		}
	})
}

func TestConsultAdvisorInstancedAndRedeclared(t *testing.T) {
	// A consultation's answer is the advisor's advice: the call's own
	// _instance says which instance it is about, so an instanced advisor's
	// answer holds none. An advisor declared again is offered once, and
	// consulted as declared last.
	p := scripted.Solutions(
		`{"calls":[{"_tool":"ConsultAdvisor","advisor":"riskAnalyst","question":"Deploy a?","_instance":"a","_outputPath":"†state.risk"}],"output":null}`,
		`{"output":{"id":"riskAnalyst","risk":0.2,"calls":"{}"}}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[
		{"type":"data","kind":"state","_instance":"a","data":{}},
		{"type":"advisor","id":"riskAnalyst","role":"Rate risks.","isInstanced":true,
			"schema":{"type":"object","properties":{"risk":{"type":"number"}},"required":["risk"]}},
		{"type":"advisor","id":"riskAnalyst","role":"Rate deployment risks.","isInstanced":true,
			"schema":{"type":"object","properties":{"risk":{"type":"number"}},"required":["risk"]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (no repair)", n)
	}
	if got, err := ref.EvalString(res.Log.Instance("a"), "†state.risk"); err != nil || string(got) != `{"calls":"{}","id":"riskAnalyst","risk":0.2}` {
		t.Errorf("state.risk of a = %s, %v", got, err)
	}
	schema := string(p.Requests()[0].Schema)
	if !strings.Contains(schema, `"enum":["riskAnalyst"]`) {
		t.Errorf("riskAnalyst is not offered once: %s", schema)
	}
	if consult := sentBytes(p.Requests()[1]); !strings.Contains(consult, "The advisor riskAnalyst: Rate deployment risks.") || strings.Contains(consult, "Rate risks.") {
		t.Errorf("the consultation does not ask riskAnalyst as declared last:\n%s", consult)
	}
}

// An advisor's entry is an object holding its id, its votes (calls) and,
// when instanced, its _instance, beside what its schema asks for. A schema
// that is no object would lose what it asks for, and one that names those
// properties itself would have them replaced (or, in its required list,
// made a composed schema no request can use): each is an error naming the
// advisor and the message, before anything is sent.
func TestAdvisorSchemaThatCannotBeAnEntry(t *testing.T) {
	for _, tt := range []struct{ schema, err string }{
		{`{"type":"string"}`, `agent: message 0 (advisor): advisor "a": schema: an advisor's entry is an object, and this schema is of type "string"`},
		{`{"type":"object","properties":{"id":{"type":"string"},"thought":{"type":"string"}},"required":["id","thought"]}`,
			`agent: message 0 (advisor): advisor "a": schema: property "id" is the entry's own (the advisor's id); name it otherwise`},
		{`{"type":"object","properties":{"calls":{"type":"array","items":{"type":"string"}}}}`,
			`agent: message 0 (advisor): advisor "a": schema: property "calls" is the entry's own (its votes for tools); name it otherwise`},
		{`{"properties":{"_instance":{"type":"string"}}}`,
			`agent: message 0 (advisor): advisor "a": schema: property "_instance" is the entry's own (the instance it speaks for); name it otherwise`},
	} {
		for _, on := range []string{"request", "demand"} {
			t.Run(on+" "+tt.schema, func(t *testing.T) {
				p := scripted.Solutions(`{"calls":[],"output":1}`)
				_, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"integer"}`),
					ctxOf(t, `[{"type":"advisor","id":"a","on":"`+on+`","role":"r","schema":`+tt.schema+`},{"type":"text","text":"hi"}]`))
				if err == nil || err.Error() != tt.err {
					t.Errorf("got %v\nwant %s", err, tt.err)
				}
				if _, ok := errors.AsType[*agent.MessageError](err); !ok {
					t.Errorf("%v is no *MessageError", err)
				}
				if n := len(p.Requests()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
			})
		}
	}
}
