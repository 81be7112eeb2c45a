package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/schema"
)

// The worked examples of pages 002, 008, 012, 013 and 015 run through
// agent.Run with each real adapter, against a fake of its provider's API
// that rejects any request whose schema breaks the provider's strict rules
// (internal/strict). The fake answers with calls that use every
// meta-property the schema offers, and each test checks that the
// meta-properties reached the provider in the schema and came back
// executed.

// strictAdapter is a real adapter talking to a strict fake of its API.
type strictAdapter struct {
	name  string
	field string // where the adapter sends the schema (strict.Request.Field)
	start func(t *testing.T, answer strict.Answer) (provider.Provider, *strict.Server)
}

var strictAdapters = []strictAdapter{
	{"openai", "response_format", func(t *testing.T, answer strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewOpenAI(t, answer)
		p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"anthropic", "output_config.format", func(t *testing.T, answer strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewAnthropic(t, answer)
		p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"gemini", "responseSchema", func(t *testing.T, answer strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewGemini(t, answer)
		p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test", ResponseSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	// Gemini by default sends the composed schema as
	// responseJsonSchema, adapted to the subset Gemini documents for it
	// (schema.GeminiJSON): a const (_tool) becomes a one-value enum,
	// "nullable" a type union, and a pattern (_outputPath, the references)
	// is described to the model rather than kept, so that only the local
	// validation enforces it.
	{"gemini-json", "responseJsonSchema", func(t *testing.T, answer strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewGemini(t, answer)
		p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
}

// strictStep makes the solution of one step of a run from the schema the
// provider got.
type strictStep func(s json.RawMessage) (json.RawMessage, error)

// strictCalls is a step that makes the calls given and leaves the output
// null.
func strictCalls(calls ...strict.Call) strictStep {
	return func(s json.RawMessage) (json.RawMessage, error) { return strict.Solution(s, nil, calls...) }
}

// strictOutput is a step that makes no call and gives the output.
func strictOutput(output string) strictStep {
	return func(s json.RawMessage) (json.RawMessage, error) { return strict.Solution(s, json.RawMessage(output)) }
}

// set builds Call.Set from pairs of a property name and its JSON value.
func set(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

// strictModel answers the requests of a run: the steps in order for the
// requests of the loop (their schema offers calls), and an example of the
// output schema for latent calls, whose requests offer none.
type strictModel struct {
	steps []strictStep

	mu    sync.Mutex
	step  int
	sent  []json.RawMessage // the schema of each step, as the provider got it
	tasks []string          // the text of each latent request
}

func (m *strictModel) answer(req *strict.Request, _ int) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if req.Schema == nil {
		return "", errors.New("a request without a schema")
	}
	if _, err := strict.Property(req.Schema, "calls"); err != nil {
		m.tasks = append(m.tasks, req.Text())
		out, err := strict.Property(req.Schema, "output")
		if err != nil {
			return "", err
		}
		ex, err := strict.Example(out)
		if err != nil {
			return "", err
		}
		sol, err := strict.Solution(req.Schema, ex)
		return string(sol), err
	}
	if m.step >= len(m.steps) {
		return "", fmt.Errorf("step %d: the scenario has %d steps", m.step+1, len(m.steps))
	}
	m.sent = append(m.sent, req.Schema)
	sol, err := m.steps[m.step](req.Schema)
	m.step++
	return string(sol), err
}

func (m *strictModel) schemas() []json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sent)
}

// taken returns the number of steps answered and the latent requests'
// texts.
func (m *strictModel) taken() (int, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.step, slices.Clone(m.tasks)
}

// forEachStrictAdapter runs f as a subtest for each adapter.
func forEachStrictAdapter(t *testing.T, f func(t *testing.T, a strictAdapter)) {
	for _, a := range strictAdapters {
		t.Run(a.name, func(t *testing.T) { f(t, a) })
	}
}

// strictRun runs schema and context with a model answering steps through
// adapter a. It fails the test on any request the server rejected, and on
// any error message in the log unless allowErrors.
func strictRun(t *testing.T, a strictAdapter, reg *agent.Registry, output, msgs string, allowErrors bool, steps ...strictStep) (*agent.RunResult, *strictModel) {
	t.Helper()
	return strictRunIn(t, a, a.field, true, reg, output, msgs, allowErrors, steps...)
}

// strictRunIn is strictRun where the adapter is to send its schema in
// field, strict or not.
func strictRunIn(t *testing.T, a strictAdapter, field string, isStrict bool, reg *agent.Registry, output, msgs string, allowErrors bool, steps ...strictStep) (*agent.RunResult, *strictModel) {
	t.Helper()
	m := &strictModel{steps: steps}
	p, srv := a.start(t, m.answer)
	cfg := agent.Config{Provider: p, Registry: reg, Concurrency: 1, MaxRepairs: -1, Clock: fixedClock}
	res, err := agent.Run(t.Context(), cfg, json.RawMessage(output), ctxOf(t, msgs))
	checkStrictServer(t, srv)
	for _, req := range srv.Requests() {
		if req.Field != field || req.Strict != isStrict {
			t.Errorf("the adapter sent its schema in %q (strict %v), want %q (strict %v)", req.Field, req.Strict, field, isStrict)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := m.taken(); n != len(steps) {
		t.Errorf("the run took %d of the %d steps", n, len(steps))
	}
	if !allowErrors {
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
	}
	return res, m
}

// checkStrictServer fails the test for every request the server rejected
// and every violation it tolerated but for the known one (see
// strictAdapters).
func checkStrictServer(t *testing.T, srv *strict.Server) {
	t.Helper()
	for _, err := range srv.Rejected() {
		t.Errorf("the provider rejected a request: %v", err)
	}
	for _, err := range srv.Tolerated() {
		var e *strict.Error
		errors.As(err, &e)
		for _, v := range e.Violations {
			if !strings.HasSuffix(v.Pointer, "/const") && !strings.HasSuffix(v.Pointer, "/pattern") && !strings.HasSuffix(v.Pointer, "/nullable") {
				t.Errorf("the provider let through an unexpected violation: %v", v)
			}
		}
	}
}

// errorTexts returns the texts of the error messages of log, in order.
func errorTexts(log *message.Log) []string {
	var out []string
	for _, m := range log.Messages() {
		if m.Type == message.TypeError {
			out = append(out, m.Error)
		}
	}
	return out
}

// strictValue evaluates a reference in the log (of an instance when
// instance is set) and returns it as compact JSON, "" when it does not
// resolve.
func strictValue(t *testing.T, log *message.Log, instance, expr string) string {
	t.Helper()
	var src ref.Source = log
	if instance != "" {
		src = log.Instance(instance)
	}
	v, err := ref.EvalString(src, expr)
	if errors.Is(err, ref.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// offers checks that the call item of tool in the schema s the provider
// got offers the properties want, in that order among its properties, and
// none of absent.
func offers(t *testing.T, s json.RawMessage, tool string, want []string, absent ...string) {
	t.Helper()
	got, err := strict.Offered(s, tool)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, p := range got {
		if slices.Contains(want, p) {
			seen = append(seen, p)
		}
		if slices.Contains(absent, p) {
			t.Errorf("tool %s offers %s: %q", tool, p, got)
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("tool %s offers %q, want %q in that order", tool, got, want)
	}
}

// itemProperty returns the schema of property prop of tool's call item,
// as the provider got it, with the schemas it refers to in place.
func itemProperty(t *testing.T, s json.RawMessage, tool, prop string) string {
	t.Helper()
	// The tools share the schemas of their meta-properties through $defs.
	s, err := schema.InlineLocal(s)
	if err != nil {
		t.Fatal(err)
	}
	item, err := strict.CallSchema(s, tool)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strict.Property(item, prop)
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// outputs returns the output messages of a log written by tool.
func outputs(log *message.Log, tool string) []message.Message {
	var out []message.Message
	for _, m := range log.Messages() {
		if m.Type == message.TypeData && m.Call != nil && strings.Contains(string(m.Call), `"_tool":"`+tool+`"`) {
			out = append(out, m)
		}
	}
	return out
}

// strictRecorder registers activities that record their calls.
type strictRecorder struct {
	mu    sync.Mutex
	calls []*agent.Call
}

func (r *strictRecorder) activity(reg *agent.Registry, name string, f func(c *agent.Call) (json.RawMessage, error)) {
	reg.Activity(name, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		v, err := f(c)
		if err != nil {
			return nil, err
		}
		return &agent.Result{Value: v}, nil
	}))
}

// of returns the recorded calls of tool.
func (r *strictRecorder) of(tool string) []*agent.Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*agent.Call
	for _, c := range r.calls {
		if c.Tool == tool {
			out = append(out, c)
		}
	}
	return out
}

// argString returns parameter k of a call's resolved arguments.
func argString(c *agent.Call, k string) string {
	var args map[string]json.RawMessage
	_ = json.Unmarshal(c.Args(), &args)
	return string(args[k])
}

// Page 002: a latent tool and an explicit one composed with an output
// schema. Every call item starts with _reasoningForCall; the latent tool
// offers _output and the explicit one does not; the model's reasoning
// travels with the call, the latent _output is the result, and the
// explicit call runs its activity.
func TestStrictToolScenario(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("sentimentAnalysis", json.RawMessage(`{"type":"object","description":"Analyzes text sentiment","properties":{
			"_tool":{"type":"string","const":"sentimentAnalysis"},
			"text":{"type":"string","description":"Text to analyze"},
			"_output":{"type":"object","properties":{"sentiment":{"type":"string"},"confidence":{"type":"number"}}}}}`))
		reg.Tool("greetUser", json.RawMessage(`{"type":"object","properties":{"userName":{"type":"string"}},"required":["userName"]}`))
		reg.Tool("weatherCheck", json.RawMessage(`{"type":"object","description":"Gets the current weather for a location.","properties":{
			"_tool":{"type":"string","const":"weatherCheck"},"location":{"type":"string"},
			"_output":{"type":"object","properties":{"temperature":{"type":"number"},"conditions":{"type":"string"}},"required":["temperature","conditions"]}},
			"required":["location"]}`))
		rec.activity(reg, "greetUser", func(c *agent.Call) (json.RawMessage, error) {
			return json.RawMessage(`"Hello, ` + strings.Trim(argString(c, "userName"), `"`) + `!"`), nil
		})
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`,
			`[{"type":"tool","tool":"sentimentAnalysis"},{"type":"tool","tool":"greetUser"},{"type":"tool","tool":"weatherCheck"},
			  {"type":"text","text":"What is the sentiment of 'This is the best!'? Then greet Alex, and tell the weather in Paris."}]`, false,
			strictCalls(
				strict.Call{Tool: "sentimentAnalysis", Set: set("_reasoningForCall", `"The user asks for the sentiment."`, "text", `"This is the best!"`,
					"_output", `{"sentiment":"positive","confidence":0.99}`, "_outputPath", `"†state.sentiment"`)},
				strict.Call{Tool: "greetUser", Set: set("_reasoningForCall", `"Then the greeting."`, "userName", `"Alex"`, "_outputPath", `"†state.greeting"`)},
				// No _output: the call is carried out by a request of its
				// own, whose schema is the tool's _output.
				strict.Call{Tool: "weatherCheck", Set: set("location", `"Paris"`, "_output", `null`, "_outputPath", `"†state.weather"`)}),
			strictOutput(`{"summary":"The text is positive; Alex is greeted."}`))

		s := m.schemas()[0]
		offers(t, s, "sentimentAnalysis", []string{"_reasoningForCall", "_tool", "text", "_output", "_outputPath", "_outputMethod"}, "_instance", "_scopes")
		offers(t, s, "greetUser", []string{"_reasoningForCall", "_tool", "userName", "_outputPath", "_outputMethod"}, "_output", "_instance", "_scopes")
		for _, tool := range []string{"sentimentAnalysis", "greetUser"} {
			if got, _ := strict.Offered(s, tool); len(got) == 0 || got[0] != "_reasoningForCall" {
				t.Errorf("%s: _reasoningForCall is not first: %q", tool, got)
			}
		}
		if got := strictValue(t, res.Log, "", "†state.sentiment"); got != `{"confidence":0.99,"sentiment":"positive"}` {
			t.Errorf("state.sentiment = %s, want the latent _output", got)
		}
		if got := strictValue(t, res.Log, "", "†state.greeting"); got != `"Hello, Alex!"` {
			t.Errorf("state.greeting = %s", got)
		}
		if got := strictValue(t, res.Log, "", "†state.weather"); got != `{"conditions":"example","temperature":1}` {
			t.Errorf("state.weather = %s, want the latent request's output", got)
		}
		if _, tasks := m.taken(); len(tasks) != 1 || !strings.Contains(tasks[0], "weatherCheck") || !strings.Contains(tasks[0], "Paris") {
			t.Errorf("latent requests %q, want one for weatherCheck in Paris", tasks)
		}
		if calls := rec.of("greetUser"); len(calls) != 1 || argString(calls[0], "userName") != `"Alex"` {
			t.Errorf("greetUser ran %d times", len(calls))
		}
		for _, tool := range []string{"sentimentAnalysis", "greetUser"} {
			out := outputs(res.Log, tool)
			if len(out) != 1 || !strings.Contains(string(out[0].Call), `"_reasoningForCall":"`) {
				t.Errorf("the output of %s does not keep the call's reasoning: %+v", tool, out)
			}
		}
		if got := string(res.Solution.Output); got != `{"summary":"The text is positive; Alex is greeted."}` {
			t.Errorf("output %s", got)
		}
	})
}

// Page 008: output paths, dynamic (a pattern) and prescribed (a const),
// and the output methods. The example's vectors: †data.user.status is the
// new status and †data.user.name still Alex.
func TestStrictOutputScenario(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("updateUserStatus", json.RawMessage(`{"type":"object","properties":{"newStatus":{"type":"string"},
			"_outputPath":{"type":"string","description":"Path to store the user summary.","pattern":"^†"}},"required":["newStatus"]}`))
		rec.activity(reg, "updateUserStatus", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(argString(c, "newStatus")), nil })
		reg.Tool("summarizeUser", json.RawMessage(`{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]},
			"_outputPath":{"type":"string","const":"†data.user.summary"},"_output":{"type":"string"}},"required":["user"]}`))
		reg.Tool("addTag", json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]}`))
		rec.activity(reg, "addTag", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(argString(c, "tag")), nil })
		reg.Tool("loadProfile", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`))
		rec.activity(reg, "loadProfile", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(`{"age":30}`), nil })

		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"updateUserStatus"},{"type":"tool","tool":"summarizeUser"},{"type":"tool","tool":"addTag"},{"type":"tool","tool":"loadProfile"},
			  {"type":"data","data":{"user":{"name":"Alex","status":"active","tags":[]}}}]`, false,
			strictCalls(
				strict.Call{Tool: "updateUserStatus", Set: set("newStatus", `"inactive"`, "_outputPath", `"†data.user.status"`, "_outputMethod", `"set"`)},
				strict.Call{Tool: "addTag", Set: set("tag", `"vip"`, "_outputPath", `"†data.user.tags"`, "_outputMethod", `"push"`)},
				strict.Call{Tool: "addTag", Set: set("tag", `"beta"`, "_outputPath", `"†data.user.tags"`, "_outputMethod", `"push"`)}),
			strictCalls(
				// The prescribed path comes from the schema: the model can
				// only write the const.
				strict.Call{Tool: "summarizeUser", Set: set("user", `"†data.user"`, "_output", `"Alex, inactive, tagged vip and beta"`, "_outputMethod", `"set"`)},
				strict.Call{Tool: "loadProfile", Set: set("id", `"u1"`, "_outputPath", `"†data.user"`, "_outputMethod", `"merge"`)}),
			strictOutput(`{"done":true}`))

		s := m.schemas()[0]
		for _, tool := range []string{"updateUserStatus", "summarizeUser", "addTag", "loadProfile"} {
			offers(t, s, tool, []string{"_reasoningForCall", "_tool", "_outputPath", "_outputMethod"})
		}
		// responseJsonSchema has no pattern: it is described instead.
		if p := itemProperty(t, s, "updateUserStatus", "_outputPath"); !strings.Contains(p, `"pattern":"^†"`) &&
			(a.field != "responseJsonSchema" || !strings.Contains(p, `(pattern: \"^†\")`)) {
			t.Errorf("the dynamic _outputPath lost its pattern: %s", p)
		}
		if p := itemProperty(t, s, "summarizeUser", "_outputPath"); !strings.Contains(p, `"†data.user.summary"`) {
			t.Errorf("the prescribed _outputPath lost its value: %s", p)
		}
		if p := itemProperty(t, s, "addTag", "_outputMethod"); !strings.Contains(p, `["set","merge","assign","push","concat"`) {
			t.Errorf("_outputMethod does not offer every method: %s", p)
		}
		for expr, want := range map[string]string{
			"†data.user.status":  `"inactive"`,
			"†data.user.name":    `"Alex"`,
			"†data.user.tags":    `["vip","beta"]`,
			"†data.user.summary": `"Alex, inactive, tagged vip and beta"`,
			"†data.user.age":     `30`,
			"†data.user":         `{"age":30,"name":"Alex","status":"inactive","summary":"Alex, inactive, tagged vip and beta","tags":["vip","beta"]}`,
		} {
			if got := strictValue(t, res.Log, "", expr); got != want {
				t.Errorf("%s = %s, want %s", expr, got, want)
			}
		}
		var methods []string
		for _, tool := range []string{"updateUserStatus", "addTag", "summarizeUser", "loadProfile"} {
			for _, out := range outputs(res.Log, tool) {
				methods = append(methods, tool+":"+string(out.Method)+":"+out.OutputPath)
			}
		}
		want := []string{"updateUserStatus:set:†data.user.status", "addTag:push:†data.user.tags", "addTag:push:†data.user.tags",
			"summarizeUser:set:†data.user.summary", "loadProfile:merge:†data.user"}
		if !slices.Equal(methods, want) {
			t.Errorf("outputs %q, want %q", methods, want)
		}
		if calls := rec.of("summarizeUser"); len(calls) != 0 {
			t.Errorf("the latent tool ran as an activity")
		}
	})
}

// strictPlanTools binds code to the tools of page 012's examples, with
// the payment failing when fail is set.
func strictPlanTools(fail bool) (*agent.Registry, *strictRecorder) {
	reg, rec := agent.NewRegistry(), &strictRecorder{}
	for name, def := range map[string]string{
		"checkBillingHistory":  `{"type":"object","properties":{"customerId":{"type":"string"}},"required":["customerId"]}`,
		"issueRefund":          `{"type":"object","properties":{"customerId":{"type":"string"},"amount":{"type":"number"}},"required":["customerId","amount"]}`,
		"escalateToSupervisor": `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`,
		"processPayment":       `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`,
		"confirmOrder":         `{"type":"object","properties":{"receipt":{"type":"object","properties":{"receiptId":{"type":"string"}},"required":["receiptId"]}},"required":["receipt"]}`,
		"reportFailure":        `{"type":"object","properties":{"error":{"type":"object","properties":{"error":{"type":"string"}},"required":["error"]}},"required":["error"]}`,
		"detectLanguage":       `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
		"isEnglish":            `{"type":"object","properties":{"language":{"type":"string"}},"required":["language"]}`,
		"translateText":        `{"type":"object","properties":{"text":{"type":"string"},"isEnglish":{"type":"boolean"}},"required":["text","isEnglish"]}`,
		"guessTopic":           `{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}},"required":["text"]}`,
	} {
		reg.Tool(name, json.RawMessage(def))
	}
	fixed := func(v string) func(*agent.Call) (json.RawMessage, error) {
		return func(*agent.Call) (json.RawMessage, error) { return json.RawMessage(v), nil }
	}
	rec.activity(reg, "checkBillingHistory", fixed(`{"orders":5,"lastChargeback":"2025-09-10"}`))
	rec.activity(reg, "issueRefund", fixed(`{"confirmationId":"refund_xyz789"}`))
	rec.activity(reg, "escalateToSupervisor", fixed(`"escalated"`))
	rec.activity(reg, "processPayment", func(*agent.Call) (json.RawMessage, error) {
		if fail {
			return nil, errors.New("card_declined: Your card was declined.")
		}
		return json.RawMessage(`{"receiptId":"rcpt_1"}`), nil
	})
	rec.activity(reg, "confirmOrder", fixed(`true`))
	rec.activity(reg, "reportFailure", fixed(`"reported"`))
	rec.activity(reg, "detectLanguage", fixed(`"French"`))
	rec.activity(reg, "isEnglish", func(c *agent.Call) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprint(argString(c, "language") == `"English"`)), nil
	})
	rec.activity(reg, "translateText", fixed(`"Hello world"`))
	return reg, rec
}

// Page 012, "Planning one step ahead": a plan in the context, calls wired
// by references to the input, and the page's nullable output schema.
func TestStrictPlanOneStepAhead(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := strictPlanTools(false)
		res, m := strictRun(t, a, reg,
			`{"type":"object","nullable":true,"properties":{"confirmationId":{"type":"string"},"message":{"type":"string"}}}`,
			`[{"type":"tool","tool":"checkBillingHistory"},{"type":"tool","tool":"issueRefund"},{"type":"tool","tool":"escalateToSupervisor"},
			  {"type":"input","request":"I'd like a refund for my last order.","customerId":"cust_123","amount":50.0},
			  {"type":"plan","plan":[{"_tool":"checkBillingHistory","customerId":"†input.customerId"},{"_tool":"issueRefund","customerId":"†input.customerId","amount":"†input.amount"}]}]`, false,
			strictCalls(
				strict.Call{Tool: "checkBillingHistory", Set: set("customerId", `"†input.customerId"`, "_outputPath", `"†state.billingHistory"`)},
				strict.Call{Tool: "issueRefund", Set: set("customerId", `"†input.customerId"`, "amount", `"†input.amount"`, "_outputPath", `"†state.refund"`)}),
			strictOutput(`{"confirmationId":"refund_xyz789","message":"The refund has been processed successfully."}`))

		for _, tool := range []string{"checkBillingHistory", "issueRefund", "escalateToSupervisor"} {
			offers(t, m.schemas()[0], tool, []string{"_reasoningForCall", "_tool", "_outputPath", "_outputMethod"}, "_output")
		}
		if calls := rec.of("issueRefund"); len(calls) != 1 || string(calls[0].Args()) != `{"customerId":"cust_123","amount":50.0}` {
			t.Errorf("issueRefund ran with %v", calls)
		}
		if len(rec.of("escalateToSupervisor")) != 0 {
			t.Error("the agent left the plan")
		}
		if got := strictValue(t, res.Log, "", "†state"); got != `{"billingHistory":{"lastChargeback":"2025-09-10","orders":5},"refund":{"confirmationId":"refund_xyz789"}}` {
			t.Errorf("state %s", got)
		}
		if got := string(res.Solution.Output); !strings.Contains(got, `"confirmationId":"refund_xyz789"`) {
			t.Errorf("output %s", got)
		}
	})
}

// Page 012, "Handling Failure": the failed payment takes the error
// branch of its output path, the call that needed the receipt never runs,
// and the next step replans with the page's enum output.
func TestStrictPlanHandlingFailure(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := strictPlanTools(true)
		res, m := strictRun(t, a, reg,
			`{"type":"object","nullable":true,"properties":{"status":{"type":"string","enum":["Success","Failed"]}}}`,
			`[{"type":"tool","tool":"processPayment"},{"type":"tool","tool":"confirmOrder"},{"type":"tool","tool":"reportFailure"},{"type":"input","amount":50.0}]`, true,
			strictCalls(
				strict.Call{Tool: "processPayment", Set: set("amount", `"†input.amount"`, "_outputPath", `"†state.receipt || †state.error"`)},
				strict.Call{Tool: "confirmOrder", Set: set("receipt", `"†state.receipt"`, "_outputPath", `"†state.confirmation"`)}),
			func(s json.RawMessage) (json.RawMessage, error) {
				return strict.Solution(s, json.RawMessage(`{"status":"Failed"}`),
					strict.Call{Tool: "reportFailure", Set: set("error", `"†state.error"`, "_outputPath", `"†state.report"`)})
			})

		if out, err := strict.Property(m.schemas()[0], "output"); err != nil || !strings.Contains(string(out), `"Success","Failed"`) {
			t.Errorf("the output's enum did not reach the provider: %s %v", out, err)
		}
		if got := strictValue(t, res.Log, "", "†state.error"); !strings.Contains(got, "card_declined") {
			t.Errorf("state.error = %s", got)
		}
		if got := strictValue(t, res.Log, "", "†state.receipt"); got != "" {
			t.Errorf("state.receipt = %s, want none", got)
		}
		if len(rec.of("confirmOrder")) != 0 || len(rec.of("reportFailure")) != 1 {
			t.Errorf("confirmOrder ran %d times, reportFailure %d", len(rec.of("confirmOrder")), len(rec.of("reportFailure")))
		}
		if got := strictValue(t, res.Log, "", "†state.report"); got != `"reported"` {
			t.Errorf("state.report = %s", got)
		}
		if errs := errorTexts(res.Log); len(errs) != 2 || !strings.Contains(errs[0], "card_declined") || !strings.Contains(errs[1], "never became ready") {
			t.Errorf("errors %q", errs)
		}
		if got := string(res.Solution.Output); got != `{"status":"Failed"}` {
			t.Errorf("output %s", got)
		}
	})
}

// Page 012, lazy mode: the model only plans, so no tool offers _output
// (not even a latent one); the plan comes back as written and runs once
// approved, each call reading what the one before wrote.
func TestStrictPlanLazy(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := strictPlanTools(false)
		m := &strictModel{steps: []strictStep{strictCalls(
			strict.Call{Tool: "detectLanguage", Set: set("text", `"†input.text"`, "_outputPath", `"†state.language"`)},
			strict.Call{Tool: "isEnglish", Set: set("language", `"†state.language"`, "_outputPath", `"†state.isEnglish"`)},
			strict.Call{Tool: "translateText", Set: set("text", `"†input.text"`, "isEnglish", `"†state.isEnglish"`, "_outputPath", `"†state.translatedText"`, "_outputMethod", `"set"`)})}}
		p, srv := a.start(t, m.answer)
		cfg := agent.Config{Provider: p, Registry: reg, Concurrency: 1, MaxRepairs: -1, Clock: fixedClock}
		msgs := ctxOf(t, `[{"type":"tool","tool":"detectLanguage"},{"type":"tool","tool":"isEnglish"},{"type":"tool","tool":"translateText"},{"type":"tool","tool":"guessTopic"},
			{"type":"input","text":"Bonjour le monde"},
			{"type":"state","schema":{"type":"object","properties":{"language":{"type":"string"},"isEnglish":{"type":"boolean"},"translatedText":{"type":"string"}}}}]`)
		_, plan, err := agent.Plan(t.Context(), cfg, json.RawMessage(`{"type":"object","properties":{"translation":{"type":"string"}}}`), msgs)
		checkStrictServer(t, srv)
		if err != nil {
			t.Fatal(err)
		}
		s := m.schemas()[0]
		for _, tool := range []string{"detectLanguage", "isEnglish", "translateText", "guessTopic"} {
			offers(t, s, tool, []string{"_reasoningForCall", "_tool", "_outputPath", "_outputMethod"}, "_output")
		}
		if ran := len(rec.of("detectLanguage")) + len(rec.of("isEnglish")) + len(rec.of("translateText")); len(plan) != 3 || ran != 0 {
			t.Fatalf("plan %s, %d calls ran", plan, ran)
		}
		res, err := agent.ExecutePlan(t.Context(), cfg, plan, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := strictValue(t, res.Log, "", "†state"); got != `{"isEnglish":false,"language":"French","translatedText":"Hello world"}` {
			t.Errorf("state %s", got)
		}
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
	})
}

// Page 013, content moderation: one call per instance, each directed by
// _instance (offered as an enum of the context's instances), reading its
// own input and writing its own state.
func TestStrictInstancingModeration(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("moderateComment", json.RawMessage(`{"type":"object","properties":{"comment":{"type":"string"},"decision":{"type":"string","enum":["approve","reject"]}},"required":["comment","decision"]}`))
		rec.activity(reg, "moderateComment", func(c *agent.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"comment":` + argString(c, "comment") + `,"decision":` + argString(c, "decision") + `}`), nil
		})
		moderate := func(instance, decision string) strict.Call {
			return strict.Call{Tool: "moderateComment", Set: set("_instance", `"`+instance+`"`, "comment", `"†input.comment"`, "decision", `"`+decision+`"`, "_outputPath", `"†state.moderation"`)}
		}
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"reviewed":{"type":"integer"}},"required":["reviewed"]}`,
			`[{"type":"tool","tool":"moderateComment"},
			  {"type":"input","_instance":"①","comment":"This is a great post!"},
			  {"type":"input","_instance":"②","comment":"I disagree with this..."},
			  {"type":"input","_instance":"③","comment":"This is spam."}]`, false,
			strictCalls(moderate("①", "approve"), moderate("②", "approve"), moderate("③", "reject")),
			strictOutput(`{"reviewed":3}`))

		s := m.schemas()[0]
		offers(t, s, "moderateComment", []string{"_reasoningForCall", "_tool", "comment", "decision", "_outputPath", "_outputMethod", "_instance"})
		if p := itemProperty(t, s, "moderateComment", "_instance"); !strings.Contains(p, `"①","②","③"`) {
			t.Errorf("_instance does not offer the instances: %s", p)
		}
		for instance, want := range map[string]string{
			"①": `{"comment":"This is a great post!","decision":"approve"}`,
			"②": `{"comment":"I disagree with this...","decision":"approve"}`,
			"③": `{"comment":"This is spam.","decision":"reject"}`,
		} {
			if got := strictValue(t, res.Log, instance, "†state.moderation"); got != want {
				t.Errorf("instance %s: state.moderation = %s, want %s", instance, got, want)
			}
		}
		if got := strictValue(t, res.Log, "", "†state.moderation"); got != "" {
			t.Errorf("the global state got %s", got)
		}
		var instances []string
		for _, c := range rec.of("moderateComment") {
			instances = append(instances, c.Instance)
		}
		if !slices.Equal(instances, []string{"①", "②", "③"}) {
			t.Errorf("calls ran for instances %q", instances)
		}
	})
}

// Page 013, "Global Input with Instanced State": a global instruction
// routed to one instance; the call merges into that instance's state and
// leaves the other's alone.
func TestStrictInstancingGlobalInput(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("updateTask", json.RawMessage(`{"type":"object","properties":{"newTask":{"type":"string"},"newStatus":{"type":"string"}},"required":["newTask","newStatus"]}`))
		rec.activity(reg, "updateTask", func(c *agent.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"task":` + argString(c, "newTask") + `,"status":` + argString(c, "newStatus") + `}`), nil
		})
		res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`,
			`[{"type":"tool","tool":"updateTask"},
			  {"type":"input","instruction":"Give employee B them a new, high-priority task to 'Finalize the quarterly report'."},
			  {"type":"state","_instance":"employee_A","task":"Draft initial proposal","status":"In Progress"},
			  {"type":"state","_instance":"employee_B","task":"Review team submissions","status":"Blocked"}]`, false,
			strictCalls(strict.Call{Tool: "updateTask", Set: set("_instance", `"employee_B"`, "newTask", `"Finalize the quarterly report"`,
				"newStatus", `"High Priority"`, "_outputPath", `"†state"`, "_outputMethod", `"merge"`)}),
			strictOutput(`{"ok":true}`))

		if got := strictValue(t, res.Log, "employee_B", "†state"); got != `{"status":"High Priority","task":"Finalize the quarterly report"}` {
			t.Errorf("employee_B's state %s", got)
		}
		if got := strictValue(t, res.Log, "employee_A", "†state"); got != `{"status":"In Progress","task":"Draft initial proposal"}` {
			t.Errorf("employee_A's state %s", got)
		}
		if calls := rec.of("updateTask"); len(calls) != 1 || calls[0].Instance != "employee_B" || calls[0].OutputMethod != "merge" {
			t.Errorf("updateTask calls %v", calls)
		}
	})
}

// strictPeek is an activity that records the context its calls see.
type strictPeek struct {
	mu   sync.Mutex
	seen map[string]string // call ID → what it saw
}

func (p *strictPeek) run(c *agent.Call) (json.RawMessage, error) {
	var b strings.Builder
	for _, m := range c.Context() {
		j, _ := m.MarshalJSON()
		b.Write(j)
	}
	key := c.Tool
	if c.Instance != "" {
		key += " " + c.Instance
	}
	p.mu.Lock()
	p.seen[key] = b.String()
	p.mu.Unlock()
	return json.RawMessage(`"ok"`), nil
}

// Page 015: provisioned scopes (a const), requested ones (an enum the
// model picks from), a scoped activity that reads what it was given, and
// instances that each see their own state.
func TestStrictScopesScenario(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		pk := &strictPeek{seen: map[string]string{}}
		requested := `"_scopes":{"type":"array","items":{"enum":["state","input"]}}`
		reg.Tool("sendMessage", json.RawMessage(`{"type":"object","properties":{"recipientId":{"type":"string"},"message":{"type":"string"},`+requested+`},"required":["recipientId","message"]}`))
		reg.Tool("logEvent", json.RawMessage(`{"type":"object","properties":{"eventName":{"type":"string"},`+requested+`},"required":["eventName"]}`))
		reg.Tool("readInput", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"_scopes":{"const":["input"]}},"required":["n"]}`))
		reg.Tool("translate", json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},`+requested+`},"required":["to"]}`))
		for _, tool := range []string{"sendMessage", "readInput", "translate"} {
			rec.activity(reg, tool, pk.run)
		}
		rec.activity(reg, "logEvent", func(c *agent.Call) (json.RawMessage, error) {
			// The activity reads the user from the scoped state (015,
			// "Providing Context to an Activity").
			for _, m := range c.Context() {
				if m.Kind == "state" && m.Instance == "" {
					var st struct {
						UserID string `json:"userId"`
					}
					var event string
					_ = json.Unmarshal(m.Data, &st)
					_ = json.Unmarshal(json.RawMessage(argString(c, "eventName")), &event)
					return json.Marshal(event + " by " + st.UserID)
				}
			}
			return nil, errors.New("no state in scope")
		})
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"sent":{"type":"boolean"}},"required":["sent"]}`,
			`[{"type":"tool","tool":"sendMessage"},{"type":"tool","tool":"logEvent"},{"type":"tool","tool":"readInput"},{"type":"tool","tool":"translate"},
			  {"type":"state","currentUser":{"id":"user_A","name":"Alice"},"userId":"user_A"},
			  {"type":"input","mentionedUser":{"id":"user_B","name":"Bob"},"instruction":"Send a welcome message to the user mentioned above."},
			  {"type":"state","_instance":"①","text":"Hello"},
			  {"type":"state","_instance":"②","text":"Bonjour"}]`, false,
			// The instanced calls come first: the others write to the
			// global state, which the instanced ones see too.
			strictCalls(
				strict.Call{Tool: "translate", Set: set("_instance", `"①"`, "_scopes", `["state"]`, "to", `"fr"`, "_outputPath", `"†state.translation"`)},
				strict.Call{Tool: "translate", Set: set("_instance", `"②"`, "_scopes", `["state"]`, "to", `"en"`, "_outputPath", `"†state.translation"`)},
				strict.Call{Tool: "sendMessage", Set: set("_scopes", `["input"]`, "recipientId", `"user_B"`, "message", `"Welcome, Bob!"`, "_outputPath", `"†state.sent"`, "_instance", `null`)},
				strict.Call{Tool: "logEvent", Set: set("_scopes", `["state"]`, "eventName", `"user_login"`, "_outputPath", `"†state.logged"`, "_instance", `null`)},
				strict.Call{Tool: "readInput", Set: set("_scopes", `["input"]`, "n", `1`, "_outputPath", `"†state.read"`, "_instance", `null`)}),
			strictOutput(`{"sent":true}`))

		s := m.schemas()[0]
		for _, tool := range []string{"sendMessage", "logEvent", "readInput", "translate"} {
			offers(t, s, tool, []string{"_reasoningForCall", "_tool", "_scopes", "_outputPath", "_outputMethod", "_instance"})
		}
		if p := itemProperty(t, s, "sendMessage", "_scopes"); !strings.Contains(p, `["state","input"]`) {
			t.Errorf("the requested scopes are not offered: %s", p)
		}
		// Gemini's Schema has no const, and an enum holds strings only:
		// Adapt describes the provisioned scopes instead ("one of").
		if p := itemProperty(t, s, "readInput", "_scopes"); !strings.Contains(p, `["input"]`) && !strings.Contains(p, `[[\"input\"]]`) {
			t.Errorf("the provisioned scopes are not offered: %s", p)
		}
		input := `{"type":"data","kind":"input","data":{"instruction":"Send a welcome message to the user mentioned above.","mentionedUser":{"id":"user_B","name":"Bob"}}}`
		global := `{"type":"data","kind":"state","data":{"currentUser":{"id":"user_A","name":"Alice"},"userId":"user_A"}}`
		for key, want := range map[string]string{
			"sendMessage": input,
			"readInput":   input,
			"translate ①": global + `{"type":"data","kind":"state","_instance":"①","data":{"text":"Hello"}}`,
			"translate ②": global + `{"type":"data","kind":"state","_instance":"②","data":{"text":"Bonjour"}}`,
		} {
			pk.mu.Lock()
			got, ok := pk.seen[key]
			pk.mu.Unlock()
			if !ok || got != want {
				t.Errorf("%s saw\n%s\nwant\n%s", key, got, want)
			}
		}
		if got := strictValue(t, res.Log, "", "†state.logged"); got != `"user_login by user_A"` {
			t.Errorf("state.logged = %s", got)
		}
		for _, instance := range []string{"①", "②"} {
			if got := strictValue(t, res.Log, instance, "†state.translation"); got != `"ok"` {
				t.Errorf("instance %s: state.translation = %s", instance, got)
			}
		}
	})
}

// TestStrictSpecSchemas composes the schema of each worked example, eager
// and lazy, and checks what Adapt makes of it for each provider against
// that provider's rules.
func TestStrictSpecSchemas(t *testing.T) {
	reg, _ := strictPlanTools(false)
	reg.Tool("sentimentAnalysis", json.RawMessage(`{"type":"object","description":"Analyzes text sentiment","properties":{"_tool":{"type":"string","const":"sentimentAnalysis"},"text":{"type":"string","description":"Text to analyze"},"_output":{"type":"object","properties":{"sentiment":{"type":"string"},"confidence":{"type":"number"}}}}}`))
	reg.Tool("greetUser", json.RawMessage(`{"type":"object","properties":{"userName":{"type":"string"}},"required":["userName"]}`))
	reg.Tool("weatherCheck", json.RawMessage(`{"type":"object","description":"Gets the current weather for a location.","properties":{"_tool":{"type":"string","const":"weatherCheck"},"location":{"type":"string"},"_output":{"type":"object","properties":{"temperature":{"type":"number"},"conditions":{"type":"string"}},"required":["temperature","conditions"]}},"required":["location"]}`))
	reg.Tool("updateUserStatus", json.RawMessage(`{"type":"object","properties":{"newStatus":{"type":"string"},"_outputPath":{"type":"string","description":"Path to store the user summary.","pattern":"^†"}},"required":["newStatus"]}`))
	reg.Tool("summarizeUser", json.RawMessage(`{"type":"object","properties":{"_outputPath":{"type":"string","const":"†data.user.summary"},"_output":{"type":"string"}}}`))
	reg.Tool("moderateComment", json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","enum":["approve","reject"]}},"required":["decision"]}`))
	reg.Tool("sendMessage", json.RawMessage(`{"type":"object","properties":{"recipientId":{"type":"string"},"_scopes":{"type":"array","items":{"enum":["state","input"]}}},"required":["recipientId"]}`))
	reg.Tool("logEvent", json.RawMessage(`{"type":"object","properties":{"eventName":{"type":"string"},"_scopes":{"const":["state"]}},"required":["eventName"]}`))
	for _, tt := range []struct {
		name, output, msgs string
	}{
		{"002 composing schemas", `{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`,
			`[{"type":"tool","tool":{"greetUser":{"type":"object","properties":{"userName":{"type":"string"}},"required":["userName"]}}},{"type":"text","text":"some prompt here"}]`},
		{"002 latent and explicit", `{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`,
			`[{"type":"tool","tool":"sentimentAnalysis"},{"type":"tool","tool":"greetUser"},{"type":"tool","tool":"weatherCheck"}]`},
		{"008 output paths", `{"type":"object","properties":{"done":{"type":"boolean"}}}`,
			`[{"type":"tool","tool":"updateUserStatus"},{"type":"tool","tool":"summarizeUser"},{"type":"data","data":{"user":{"name":"Alex","status":"active"}}}]`},
		{"012 planning one step ahead", `{"type":"object","nullable":true,"properties":{"confirmationId":{"type":"string"},"message":{"type":"string"}}}`,
			`[{"type":"tool","tool":"checkBillingHistory"},{"type":"tool","tool":"issueRefund"},{"type":"tool","tool":"escalateToSupervisor"},{"type":"input","customerId":"cust_123","amount":50.0}]`},
		{"012 handling failure", `{"type":"object","nullable":true,"properties":{"status":{"type":"string","enum":["Success","Failed"]}}}`,
			`[{"type":"tool","tool":"processPayment"},{"type":"tool","tool":"confirmOrder"},{"type":"tool","tool":"reportFailure"},{"type":"input","amount":50.0}]`},
		{"012 schema-guided planning", `{"type":"object","properties":{"translation":{"type":"string"}}}`,
			`[{"type":"tool","tool":"detectLanguage"},{"type":"tool","tool":"isEnglish"},{"type":"tool","tool":"translateText"},{"type":"tool","tool":"guessTopic"},{"type":"input","text":"Bonjour le monde"}]`},
		{"013 content moderation", `{"type":"object","properties":{"reviewed":{"type":"integer"}}}`,
			`[{"type":"tool","tool":"moderateComment"},{"type":"input","_instance":"①","comment":"a"},{"type":"input","_instance":"②","comment":"b"},{"type":"input","_instance":"③","comment":"c"}]`},
		{"015 scopes", `{"type":"object","properties":{"sent":{"type":"boolean"}}}`,
			`[{"type":"tool","tool":"sendMessage"},{"type":"tool","tool":"logEvent"},{"type":"state","_instance":"①","text":"Hello"},{"type":"state","_instance":"②","text":"Bonjour"}]`},
	} {
		for _, lazy := range []bool{false, true} {
			name := tt.name
			if lazy {
				name += " lazy"
			}
			t.Run(name, func(t *testing.T) {
				composed := strictCompose(t, reg, tt.output, tt.msgs, lazy)
				for _, d := range []schema.Dialect{schema.OpenAI, schema.Anthropic, schema.Gemini} {
					adapted, err := schema.Adapt(composed, d)
					if err != nil {
						t.Errorf("%v: Adapt: %v", d, err)
						continue
					}
					if err := strict.Check(d, adapted); err != nil {
						t.Errorf("%v: %v\n%s", d, err, adapted)
					}
				}
			})
		}
	}
}

// strictCompose returns the schema a request of context composes, as the
// provider is given it before adaptation.
func strictCompose(t *testing.T, reg *agent.Registry, output, msgs string, lazy bool) json.RawMessage {
	t.Helper()
	var got json.RawMessage
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		got = req.Schema
		return func(yield func(*provider.Chunk, error) bool) {
			yield(&provider.Chunk{Text: `{"calls":[],"output":null}`, Done: true, FinishReason: "stop"}, nil)
		}
	})
	cfg := agent.Config{Provider: p, Registry: reg, MaxRepairs: -1}
	var err error
	if lazy {
		_, _, err = agent.Plan(t.Context(), cfg, json.RawMessage(output), ctxOf(t, msgs))
	} else {
		_, err = agent.Request(t.Context(), cfg, json.RawMessage(output), ctxOf(t, msgs))
	}
	if got == nil {
		t.Fatalf("no request: %v", err)
	}
	return got
}

// TestStrictAnthropicLimitsKnownDefect pins a defect: Claude's structured
// outputs allow 24 optional and 16 union-typed parameters per request,
// and neither schema.Adapt nor the anthropic adapter keeps a composed
// schema under them. Each call item has three optional meta-properties
// (_reasoningForCall, _outputPath, _outputMethod), four with instances, so
// the ninth tool of one required parameter (the seventh with instances)
// breaks the first limit; every parameter is a union (a value or a
// reference), so tools with more parameters break the second sooner.
func TestStrictAnthropicLimitsKnownDefect(t *testing.T) {
	for _, tt := range []struct {
		tools, params int
		instances     bool
		want          string // the violations, "" for none
	}{
		{8, 1, false, ""},
		{9, 1, false, "optional-parameters@"},
		{6, 1, true, ""},
		{7, 1, true, "optional-parameters@"},
		{5, 3, false, ""},
		{6, 3, false, "union-parameters@"},
	} {
		t.Run(fmt.Sprintf("%d tools of %d parameters, instances %v", tt.tools, tt.params, tt.instances), func(t *testing.T) {
			reg := agent.NewRegistry()
			var msgs []string
			for i := range tt.tools {
				var props, req []string
				for j := range tt.params {
					props = append(props, fmt.Sprintf(`"p%d":{"type":"string"}`, j))
					req = append(req, fmt.Sprintf(`"p%d"`, j))
				}
				name := fmt.Sprintf("tool%d", i)
				reg.Tool(name, json.RawMessage(`{"type":"object","properties":{`+strings.Join(props, ",")+`},"required":[`+strings.Join(req, ",")+`]}`))
				msgs = append(msgs, `{"type":"tool","tool":"`+name+`"}`)
			}
			if tt.instances {
				msgs = append(msgs, `{"type":"input","_instance":"a","x":1}`)
			}
			composed := strictCompose(t, reg, `{"type":"object","properties":{"r":{"type":"string"}},"required":["r"]}`, "["+strings.Join(msgs, ",")+"]", false)
			adapted, err := schema.Adapt(composed, schema.Anthropic)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := strict.Check(schema.Anthropic, adapted); err != nil {
				var e *strict.Error
				errors.As(err, &e)
				for _, v := range e.Violations {
					got = append(got, string(v.Rule)+"@"+v.Pointer)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("violations %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStrictGeminiFallback runs a composed schema that Gemini's
// responseSchema cannot say (here a free-form output object): it goes as
// responseJsonSchema, adapted to the subset Gemini documents for it, so
// that the _tool const is an enum the API enforces, and the patterns it
// cannot enforce (_outputPath, the references) are described to the model.
func TestStrictGeminiFallback(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
	rec := &strictRecorder{}
	rec.activity(reg, "put", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(argString(c, "v")), nil })
	m := &strictModel{steps: []strictStep{
		strictCalls(strict.Call{Tool: "put", Set: set("v", `7`, "_outputPath", `"†state.v"`)}),
		strictOutput(`{"v":7}`),
	}}
	srv := strict.NewGemini(t, m.answer)
	p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, MaxRepairs: -1}, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"tool","tool":"put"}]`))
	if err != nil {
		t.Fatal(err)
	}
	checkStrictServer(t, srv)
	if got := strictValue(t, res.Log, "", "†state.v"); got != "7" {
		t.Errorf("state.v = %s", got)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Field != "responseJsonSchema" {
		t.Fatalf("requests %v, want the schema as responseJsonSchema", reqs)
	}
	s := reqs[0].Schema
	if p := itemProperty(t, s, "put", "_tool"); p != `{"enum":["put"]}` {
		t.Errorf("_tool is %s, want a one-value enum", p)
	}
	for _, prop := range []string{"_outputPath", "v"} {
		if p := itemProperty(t, s, "put", prop); strings.Contains(p, `"pattern"`) || !strings.Contains(p, `(pattern: \"^†`) {
			t.Errorf("%s is %s, want its pattern described", prop, p)
		}
	}
}

// TestStrictOutputDefinitions runs an output schema with definitions of
// its own, one naming another and one named like a definition the
// composed schema has, as schema generators write them: each provider
// gets them in the composed schema's root $defs, and the output the model
// gives comes back checked against them. OpenAI also gets a recursive
// one; Anthropic's structured outputs refuse recursion, and Gemini's
// responseSchema cannot say it.
func TestStrictOutputDefinitions(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		kid := `{"$ref":"#/$defs/leaf"}`
		if a.name == "openai" {
			kid = `{"$ref":"#/$defs/node"}`
		}
		reg := agent.NewRegistry()
		reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
		rec := &strictRecorder{}
		rec.activity(reg, "put", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(argString(c, "v")), nil })
		output := `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"},"kind":{"$ref":"#/$defs/_reference"}},"required":["root","kind"],
			"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","items":` + kid + `}},"required":["name"]},
			"leaf":{"type":"object","properties":{"name":{"type":"string"},"kids":{"type":"array","maxItems":0}},"required":["name"]},
			"_reference":{"enum":["tree","bush"]}}}`
		want := `{"root":{"name":"a","kids":[{"name":"b","kids":[]}]},"kind":"bush"}`
		res, m := strictRun(t, a, reg, output, `[{"type":"tool","tool":"put"}]`, false,
			strictCalls(strict.Call{Tool: "put", Set: set("v", `7`, "_outputPath", `"†state.v"`)}),
			strictOutput(want))
		var got, w any
		if err := json.Unmarshal(res.Solution.Output, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(want), &w)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("output %s, want %s", res.Solution.Output, want)
		}
		if s := string(m.schemas()[0]); !strings.Contains(s, `"tree","bush"`) || !strings.Contains(s, "A reference †kind.path") && !strings.Contains(s, "A reference \\u2020kind.path") {
			t.Errorf("the output's definition or the tools' replaced the other:\n%s", s)
		}
	})
}

// Instances that appear mid-run (a loader returns instanced input):
// _instance is the enum of the context's instances until the first new
// one, then a string, which every strict mode accepts; a call names the
// new instance and writes its state.
func TestStrictInstancesMidRun(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("load", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`))
		reg.Activity("load", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			var p struct{ ID string }
			if err := json.Unmarshal(c.Args(), &p); err != nil {
				return nil, err
			}
			m := message.Data(message.KindInput, json.RawMessage(`{"comment":"item `+p.ID+`"}`))
			m.Instance = p.ID
			return &agent.Result{Messages: []message.Message{m}}, nil
		}))
		reg.Tool("moderateComment", json.RawMessage(`{"type":"object","properties":{"comment":{"type":"string"}},"required":["comment"]}`))
		rec.activity(reg, "moderateComment", func(c *agent.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"seen":` + argString(c, "comment") + `}`), nil
		})
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"load"},{"type":"tool","tool":"moderateComment"},{"type":"input","_instance":"a","comment":"item a"}]`, false,
			strictCalls(strict.Call{Tool: "load", Set: set("id", `"b"`)}),
			strictCalls(strict.Call{Tool: "moderateComment", Set: set("_instance", `"b"`, "comment", `"†input.comment"`, "_outputPath", `"†state.moderation"`)}),
			strictOutput(`{"done":true}`))
		s := m.schemas()
		if p := itemProperty(t, s[0], "moderateComment", "_instance"); !strings.Contains(p, `"enum":["a"]`) && !strings.Contains(p, `"enum":["a",null]`) {
			t.Errorf("request 1's _instance: %s", p)
		}
		if p := strings.ToLower(itemProperty(t, s[1], "moderateComment", "_instance")); !strings.Contains(p, `"string"`) || strings.Contains(p, "enum") {
			t.Errorf("request 2's _instance: %s", p)
		}
		if string(s[1]) != string(s[2]) {
			t.Errorf("the schema changed after the instances opened")
		}
		if got := strictValue(t, res.Log, "b", "†state.moderation"); got != `{"seen":"item b"}` {
			t.Errorf("instance b: state.moderation = %s", got)
		}
	})
}

// outlineSection is a recursive Go type: a tool's parameters and result
// may be trees.
type outlineSection struct {
	Title    string           `json:"title" jsonschema:"description=The section's title"`
	Sections []outlineSection `json:"sections,omitempty"`
}

// A tool whose parameters are a recursive Go type reaches every provider
// and runs: strict OpenAI and Gemini's responseJsonSchema take the
// recursion, Anthropic's strict mode does not, so the schema goes there as
// a forced tool without strict mode, and Gemini's responseSchema cannot
// say it, so the adapter sends responseJsonSchema.
func TestStrictRecursiveTool(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		var got outlineSection
		err := agent.Func(reg, "outline", "Files an outline.", func(_ context.Context, s outlineSection) (outlineSection, error) {
			got = s
			s.Title = strings.ToUpper(s.Title)
			return s, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		field, isStrict := a.field, true
		switch a.name {
		case "anthropic":
			field, isStrict = "tools/solution", false
		case "gemini":
			field = "responseJsonSchema"
		}
		nested := `[{"title":"b","sections":[{"title":"c","sections":[]}]},{"title":"d","sections":null}]`
		res, m := strictRunIn(t, a, field, isStrict, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"outline"}]`, false,
			strictCalls(strict.Call{Tool: "outline", Set: set("title", `"a"`, "sections", nested, "_outputPath", `"†state.outline"`)}),
			strictOutput(`{"done":true}`))
		want := outlineSection{Title: "a", Sections: []outlineSection{{Title: "b", Sections: []outlineSection{{Title: "c", Sections: []outlineSection{}}}}, {Title: "d"}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the activity got %+v, want %+v", got, want)
		}
		if v := strictValue(t, res.Log, "", "†state.outline.title"); v != `"A"` {
			t.Errorf("state.outline.title = %s", v)
		}
		if s := m.schemas(); len(s) == 0 || !strings.Contains(string(s[0]), "outline.outlineSection") {
			t.Errorf("the schema names no definition of the section: %s", s)
		}
	})
}

// labelled has a map parameter, as a Go map, zod's Record or Python's
// dict make one.
type labelled struct {
	Name   string            `json:"name" jsonschema:"description=What to label"`
	Labels map[string]string `json:"labels" jsonschema:"description=The labels by key"`
}

// A tool with a map parameter reaches every provider and runs. Strict
// OpenAI and Anthropic want every object closed, which would leave the
// model only {} for the map, so the schema goes there with strict mode
// off (OpenAI's strict false, Anthropic's forced tool), and Gemini's
// responseSchema cannot say a map, so the adapter sends responseJsonSchema.
func TestStrictMapTool(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		var got labelled
		err := agent.Func(reg, "label", "Labels a thing.", func(_ context.Context, l labelled) (int, error) {
			got = l
			return len(l.Labels), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		field, isStrict := a.field, false
		switch a.name {
		case "anthropic":
			field = "tools/solution"
		case "gemini":
			field, isStrict = "responseJsonSchema", true
		case "gemini-json":
			isStrict = true
		}
		res, _ := strictRunIn(t, a, field, isStrict, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"label"}]`, false,
			strictCalls(strict.Call{Tool: "label", Set: set("name", `"box"`, "labels", `{"colour":"red","size":"L"}`, "_outputPath", `"†state.n"`)}),
			strictOutput(`{"done":true}`))
		if want := (labelled{Name: "box", Labels: map[string]string{"colour": "red", "size": "L"}}); !reflect.DeepEqual(got, want) {
			t.Errorf("the activity got %+v, want %+v", got, want)
		}
		if v := strictValue(t, res.Log, "", "†state.n"); v != "2" {
			t.Errorf("state.n = %s", v)
		}
	})
}
