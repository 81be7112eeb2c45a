package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
)

func TestDelegateSpeaker(t *testing.T) {
	// Page 014, "Flexible input mapping": the call's parameters become the
	// delegate's input, next to the delegate's own input schema; nothing of
	// the parent reaches it.
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","properties":{"sent":{"type":"boolean"}}},"context":[
		{"type":"system","message":"You are an expert in messaging in English."},
		{"type":"input","schema":{"type":"object","properties":{"recipientId":{"type":"string"},"messageBody":{"type":"string"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("speaker_EN", idea)
	reg.Tool("sendMessage", json.RawMessage(`{"type":"object","_delegate":"speaker_EN","properties":{"userId":{"type":"string"},"text":{"type":"string"}}}`))
	p := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"sendMessage","userId":"u_123","text":"Hello, world!","_outputPath":"†state.delivery"}],"output":null}`}, Usage: usage(10)},
		scripted.Response{Solutions: []string{`{"output":{"sent":true}}`}, Usage: usage(5)},
		scripted.Response{Solutions: []string{`{"calls":[],"output":"done"}`}, Usage: usage(1)},
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"sendMessage"},{"type":"state","apiKey":"TOPSECRET"},{"type":"text","text":"Greet u_123"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.delivery.sent"); got != "true" {
		t.Errorf("delivery = %s", got)
	}
	if res.Usage.Input != 16 {
		t.Errorf("usage %+v: the delegate's does not roll up", res.Usage)
	}
	var sub strings.Builder
	for _, m := range p.Requests()[1].Messages {
		sub.WriteString(string(m.Role) + ": " + m.Text + "\n")
	}
	got := sub.String()
	for _, want := range []string{"system: You are an expert in messaging in English.", `"userId":"u_123"`, `"recipientId"`} {
		if !strings.Contains(got, want) {
			t.Errorf("delegate context lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TOPSECRET") || strings.Contains(got, "Greet u_123") {
		t.Errorf("the parent's context leaked into the delegate:\n%s", got)
	}
	if strings.Contains(string(p.Requests()[0].Schema), "_delegate") {
		t.Error("the model saw _delegate")
	}
}

func usage(n int) provider.Usage { return provider.Usage{Input: n} }

func TestDelegateScopedAnonymousAndDepth(t *testing.T) {
	// An anonymous delegate with provisioned scopes sees its input and the
	// scoped state of its own instance only; an Idea file is read from
	// Config.Ideas; nesting stops at MaxDepth.
	reg := agent.NewRegistry()
	reg.Tool("translate", json.RawMessage(`{"type":"object","description":"You are a translator.","_delegate":"anonymous",
		"properties":{"to":{"type":"string"},"_scopes":{"const":["state"]},"_output":{"type":"string"}}}`))
	reg.Tool("deep", json.RawMessage(`{"type":"object","_delegate":"deep.json","properties":{}}`))
	ideas := fstest.MapFS{"deep.json": {Data: []byte(`{"schema":{},"context":[{"type":"tool","tool":"deep"}]}`)}}
	p := scripted.Solutions(
		`{"calls":[{"_tool":"translate","to":"fr","_instance":"①","_outputPath":"†state.out"}],"output":null}`,
		`{"output":"Bonjour"}`,
		`{"calls":[{"_tool":"deep","_outputPath":"†state.deep"}],"output":null}`,
		`{"calls":[{"_tool":"deep","_outputPath":"†state.d"}],"output":null}`,
		`{"calls":[],"output":"x"}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Ideas: ideas, MaxDepth: 1},
		json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"translate"},{"type":"tool","tool":"deep"},
			{"type":"state","_instance":"①","text":"Hello"},{"type":"state","_instance":"②","text":"Secret two"}]`))
	if err != nil {
		t.Fatal(err)
	}
	texts := func(i int) string {
		var b strings.Builder
		for _, m := range p.Requests()[i].Messages {
			b.WriteString(m.Text + "\n")
		}
		return b.String()
	}
	if sub := texts(1); !strings.Contains(sub, "You are a translator.") || !strings.Contains(sub, "Hello") || strings.Contains(sub, "Secret two") {
		t.Errorf("anonymous delegate request:\n%s", sub)
	}
	if got, err := ref.EvalString(res.Log.Instance("①"), "†state.out"); err != nil || string(got) != `"Bonjour"` {
		t.Errorf("state.out of ① = %s, %v", got, err)
	}
	// The nested delegate inside deep.json is one level too deep: its sub-run
	// reports it to its own model.
	if sub := texts(4); !strings.Contains(sub, "delegation too deep") {
		t.Errorf("nesting past MaxDepth was not reported:\n%s", sub)
	}
}

func TestIdeator(t *testing.T) {
	// 103: an Idea with an input declaration becomes a tool whose
	// parameters are its input schema and whose output is its schema.
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","properties":{"article":{"type":"string"}},"required":["article"]},"context":[
		{"type":"system","message":"Write short articles."},
		{"type":"input","schema":{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	if err := reg.Ideator("writeArticle", idea); err != nil {
		t.Fatal(err)
	}
	if err := reg.Ideator("nope", &agent.Idea{Schema: json.RawMessage(`{}`)}); !errors.Is(err, agent.ErrNotIdeator) {
		t.Errorf("an Idea without input: %v", err)
	}
	p := scripted.Solutions(
		`{"calls":[{"_tool":"writeArticle","topic":"the weather","_outputPath":"†state.article"}],"output":null}`,
		`{"output":{"article":"Sunny."}}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"writeArticle"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.article.article"); got != `"Sunny."` {
		t.Errorf("article = %s", got)
	}
	schema := string(p.Requests()[0].Schema)
	if !strings.Contains(schema, `"topic"`) || !strings.Contains(schema, "Write short articles.") || strings.Contains(schema, `"_delegate"`) {
		t.Errorf("the tool the model saw: %s", schema)
	}
	if !strings.Contains(string(p.Requests()[1].Schema), `"article"`) {
		t.Errorf("the delegate's schema: %s", p.Requests()[1].Schema)
	}
}

func TestUpfrontDelegates(t *testing.T) {
	// Page 014, upfront resolution: the delegate's input schema and its
	// output join the tool before the parent's request, so the model
	// writes calls in the delegate's own terms.
	speaker := `{"schema":{"type":"object","properties":{"sent":{"type":"boolean"}},"required":["sent"]},"context":[
		{"type":"system","message":"You are an expert in messaging in English."},
		{"type":"input","schema":{"type":"object","properties":{"recipientId":{"type":"string"},"messageBody":{"type":"string"}},"required":["recipientId","messageBody"]}}]}`
	reg := agent.NewRegistry()
	reg.Tool("sendMessage", json.RawMessage(`{"type":"object","_delegate":"speaker_EN.json","properties":{"priority":{"type":"integer"}},"required":["priority"]}`))
	reg.Tool("anon", json.RawMessage(`{"type":"object","_delegate":"anonymous","properties":{"q":{"type":"string"}}}`))
	fsys := fstest.MapFS{"speaker_EN.json": {Data: []byte(speaker)}}
	if err := reg.UpfrontDelegates(fsys); err != nil {
		t.Fatal(err)
	}
	def, _ := reg.LookupTool("sendMessage")
	want := `{"type":"object","_delegate":"speaker_EN.json","properties":{"priority":{"type":"integer"},"recipientId":{"type":"string"},"messageBody":{"type":"string"},` +
		`"_output":{"type":"object","properties":{"sent":{"type":"boolean"}},"required":["sent"]}},"required":["priority","recipientId","messageBody"],"description":"You are an expert in messaging in English."}`
	if string(def) != want {
		t.Errorf("merged definition\n got %s\nwant %s", def, want)
	}
	if anon, _ := reg.LookupTool("anon"); strings.Contains(string(anon), "_output") {
		t.Errorf("an anonymous delegate was changed: %s", anon)
	}
	// The model sees the merged contract, and a call that meets it runs
	// the delegate.
	p := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"sendMessage","priority":1,"recipientId":"u_1","messageBody":"hi","_outputPath":"†state.delivery"}],"output":null}`}},
		scripted.Response{Solutions: []string{`{"output":{"sent":true}}`}},
		scripted.Response{Solutions: []string{`{"calls":[],"output":"done"}`}},
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Ideas: fsys}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"sendMessage"},{"type":"text","text":"Say hi to u_1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.delivery.sent"); got != "true" {
		t.Errorf("delivery %s", got)
	}
	if sent := string(p.Requests()[0].Schema); !strings.Contains(sent, "recipientId") || !strings.Contains(sent, "messageBody") {
		t.Errorf("the first request's schema lacks the delegate's input: %s", sent)
	}
	// A delegate whose Idea cannot be found is an error naming the tool.
	bad := agent.NewRegistry()
	bad.Tool("lost", json.RawMessage(`{"type":"object","_delegate":"nowhere.json"}`))
	if err := bad.UpfrontDelegates(fsys); err == nil || !strings.Contains(err.Error(), `tool "lost"`) {
		t.Errorf("missing Idea: %v", err)
	}
}

func TestDelegateInstanceScopes(t *testing.T) {
	// Page 015, "Instancing with scoped delegates": a call of instance ①
	// scoping state gives its delegate the state of ①, laid over the
	// global state, as the delegate's own data. The delegate knows nothing
	// of the parent's instances: its calls read that state with plain
	// references, and it is offered no _instance.
	reg := agent.NewRegistry()
	reg.Tool("shout", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`))
	var shouted string
	reg.Activity("shout", agent.Bind(func(_ context.Context, p struct {
		Text string `json:"text"`
	}) (string, error) {
		shouted = p.Text
		return p.Text + "!", nil
	}))
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"system","message":"You are a translator."},{"type":"tool","tool":"shout"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("translatorDelegate", idea)
	reg.Tool("translate", json.RawMessage(`{"type":"object","_delegate":"translatorDelegate","properties":{"to":{"type":"string"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"translate","to":"fr","_instance":"①","_scopes":["state"],"_outputPath":"†state.out"}],"output":null}`,
		`{"calls":[{"_tool":"shout","text":"†state.text","_outputPath":"†state.loud"}],"output":null}`,
		`{"calls":[],"output":"Bonjour!"}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"translate"},{"type":"state","team":"i18n","text":"Hi"},
			{"type":"state","_instance":"①","text":"Hello"},{"type":"state","_instance":"②","text":"Secret two"}]`))
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Requests()[1]
	var got []string
	for _, m := range sub.Messages {
		got = append(got, string(m.Role)+": "+m.Text)
	}
	want := []string{
		"system: You are a translator.",
		"user: ## Data: ¶state\n{\"team\":\"i18n\",\"text\":\"Hello\"}",
		"user: ## Data: ¶input\nInput data MUST be treated as a structured prompt\n{\"to\":\"fr\"}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the delegate's context:\n%q\nwant\n%q", got, want)
	}
	if shouted != "Hello" {
		t.Errorf("the delegate's call read †state.text as %q, want the instance's %q", shouted, "Hello")
	}
	if strings.Contains(string(sub.Schema), "_instance") {
		t.Errorf("the delegate is offered the parent's instances: %s", sub.Schema)
	}
	for _, m := range res.Log.Messages() {
		if m.Type == "error" {
			t.Errorf("error: %s", m.Error)
		}
	}
	if got, err := ref.EvalString(res.Log.Instance("①"), "†state.out"); err != nil || string(got) != `"Bonjour!"` {
		t.Errorf("state.out of ① = %s, %v", got, err)
	}
}

// TestDelegateInputWinsOverScopes: page 014's execution flow appends what
// the scopes import, then the call's parameters as the input. A call that
// scopes the parent's input says its own parameters last, so they win
// where both have a key.
func TestDelegateInputWinsOverScopes(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("check", json.RawMessage(`{"type":"object","_delegate":"anonymous","description":"Checks a service.","properties":{"service":{"type":"string"},"_output":{"type":"string"}},"required":["service"]}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"check","service":"db","_scopes":["input"],"_outputPath":"†state.status"}],"output":null}`,
		`{"output":"db is up"}`,
		`{"calls":[],"output":"done"}`,
	)
	_, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"check"},{"type":"input","data":{"service":"api","region":"eu"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	sub := p.Requests()[1]
	var texts []string
	for _, m := range sub.Messages {
		texts = append(texts, m.Text)
	}
	got := strings.Join(texts, "\n")
	if !strings.Contains(got, `{"region":"eu","service":"api"}`) || !strings.HasSuffix(got, `merge †input: {"service":"db"}`) {
		t.Errorf("the delegate's context:\n%s\nwant the parent's input, then the call's parameters over it", got)
	}
}

// The error of a delegate's or a latent call's own run, which the model
// reads, names the call once and says "agent:" nowhere inside: it is the
// package's prefix, not part of what went wrong.
func TestSubRunErrorsReadOnce(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("d", json.RawMessage(`{"type":"object","description":"sub","properties":{"q":{"type":"string"},"_output":{"type":"string"}},"_delegate":"anonymous"}`))
	reg.Tool("l", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"d","q":"x","_outputPath":"†state.x"}],"output":null}`,
		`{"output":null}`, `{"output":null}`, // the delegate's two steps
		`{"calls":[{"_tool":"l","q":"x","_outputPath":"†state.y"}],"output":null}`,
		`{"output":"not a number"}`, // the latent call's answer, not repaired
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, MaxSteps: 2, MaxRepairs: -1, Concurrency: 1},
		json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"d"},{"type":"tool","tool":"l"}]`))
	if !errors.Is(err, agent.ErrMaxSteps) { // the parent's own two steps
		t.Fatalf("err = %v, want ErrMaxSteps", err)
	}
	want := []string{
		`runtime error in d: delegate "anonymous": too many steps (2)`,
		`runtime error in l: latent execution: solution 0 invalid after 1 attempts: at /output: expected null or integer, got string`,
	}
	if got := errorTexts(res.Log); !slices.Equal(got, want) {
		t.Errorf("errors\n%q\nwant\n%q", got, want)
	}
}

// A delegate Idea's own presets (its "presets") are found before the
// registry's, as when the Idea runs on its own.
func TestDelegateIdeaPresets(t *testing.T) {
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"presets":{"Tone":{"messages":[{"type":"text","role":"system","text":"Be warm."}]}},
		"context":[{"type":"system","message":"You greet."},{"type":"preset","preset":"Tone"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("greeter", idea)
	reg.Tool("greet", json.RawMessage(`{"type":"object","_delegate":"greeter","properties":{"name":{"type":"string"}}}`))
	p := scripted.Solutions(`{"calls":[{"_tool":"greet","name":"Ada","_outputPath":"†state.g"}],"output":null}`, `{"output":"Hi Ada"}`, `{"calls":[],"output":1}`)
	res, err := agent.Run(context.Background(), agent.Config{Registry: reg, Provider: p}, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"greet"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	if got := lookup(t, res.Log, "†state.g"); got != `"Hi Ada"` {
		t.Errorf("state.g = %s", got)
	}
	var warm bool
	for _, m := range p.Requests()[1].Messages {
		warm = warm || strings.Contains(m.Text, "Be warm.")
	}
	if !warm {
		t.Error("the delegate's request does not say its preset's message")
	}
}

// TestRegistryIdeaIsACopy: the registry keeps its own copy of an Idea;
// what the caller changes afterwards reaches no delegate run.
func TestRegistryIdeaIsACopy(t *testing.T) {
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"presets":{"Tone":{"messages":[{"type":"text","role":"system","text":"Be warm."}]}},
		"context":[{"type":"system","message":"You greet."},{"type":"preset","preset":"Tone"}],
		"mcp":[{"command":["srv","--flag"],"env":["A=1"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("greeter", idea)
	// The caller reuses its Idea for something else.
	idea.Context[0].Text = "You insult."
	idea.Schema[1] = ' '
	idea.Presets["Tone"].Messages[0].Text = "Be cold."
	idea.MCP[0].Command[1] = "--other"
	reg.Tool("greet", json.RawMessage(`{"type":"object","_delegate":"greeter","properties":{"name":{"type":"string"}}}`))
	p := scripted.Solutions(`{"calls":[{"_tool":"greet","name":"Ada","_outputPath":"†state.g"}],"output":null}`, `{"output":"Hi Ada"}`, `{"calls":[],"output":1}`)
	res, err := agent.Run(context.Background(), agent.Config{Registry: reg, Provider: p}, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"greet"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	var sent string
	for _, m := range p.Requests()[1].Messages {
		sent += m.Text + "\n"
	}
	if !strings.Contains(sent, "You greet.") || !strings.Contains(sent, "Be warm.") || strings.Contains(sent, "insult") || strings.Contains(sent, "cold") {
		t.Errorf("the delegate's request:\n%s", sent)
	}
}

// A delegate's sub-run is a run of its Idea, so it shows data to the
// model as the Idea's rendering says, whatever the parent's is.
func TestDelegateIdeaRendering(t *testing.T) {
	for _, tt := range []struct {
		idea, parent agent.Rendering
		update       bool // whether the sub-run's second request shows the write as an update
	}{
		{agent.RenderSnapshot, "", false},
		{agent.RenderCached, agent.RenderSnapshot, true},
		{"", agent.RenderSnapshot, false},
		{"", "", true},
	} {
		t.Run(string(tt.idea)+"/"+string(tt.parent), func(t *testing.T) {
			reg := echoReg()
			rendering := ""
			if tt.idea != "" {
				rendering = `,"rendering":"` + string(tt.idea) + `"`
			}
			idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","properties":{"a":{"type":"integer"}}},"context":[
				{"type":"system","message":"You count."},{"type":"tool","tool":"put"},{"type":"state","a":0}]` + rendering + `}`))
			if err != nil {
				t.Fatal(err)
			}
			reg.Idea("counter", idea)
			reg.Tool("count", json.RawMessage(`{"type":"object","_delegate":"counter","properties":{}}`))
			p := scripted.Solutions(
				`{"calls":[{"_tool":"count","_outputPath":"†state.counted"}],"output":null}`,
				`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
				`{"calls":[],"output":{"a":1}}`,
				`{"calls":[],"output":{"done":true}}`)
			_, err = agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Rendering: tt.parent}, anyOut,
				ctxOf(t, `[{"type":"tool","tool":"count"},{"type":"text","text":"go"}]`))
			if err != nil {
				t.Fatal(err)
			}
			var sub strings.Builder
			for _, m := range p.Requests()[2].Messages {
				sub.WriteString(m.Text + "\n")
			}
			if got := strings.Contains(sub.String(), "## Data update"); got != tt.update {
				t.Errorf("the sub-run's second request shows an update: %v, want %v:\n%s", got, tt.update, sub.String())
			}
		})
	}
}

// An Ideator's input becomes its tool's parameters, which are an object's
// properties: an input schema of another shape (a string, an array, a
// choice of objects) has none to give, and registering it would make a
// tool the model cannot give the input to. It is an error naming the
// Ideator, for Registry.Ideator, ResolveDelegate and UpfrontDelegates.
func TestIdeatorInputNotAnObject(t *testing.T) {
	for _, tt := range []struct{ input, err string }{
		{`{"type":"string"}`, `ideator "t": input schema: a tool's parameters are an object's properties, and this schema is of type "string"`},
		{`{"type":"array","items":{"type":"string"}}`, `ideator "t": input schema: a tool's parameters are an object's properties, and this schema is of type "array"`},
		{`{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"b":{"type":"string"}}}]}`,
			`ideator "t": input schema: a tool's parameters are an object's properties, and this schema has no properties`},
	} {
		t.Run(tt.input, func(t *testing.T) {
			idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"system","message":"x"},{"type":"input","schema":` + tt.input + `}]}`))
			if err != nil {
				t.Fatal(err)
			}
			reg := agent.NewRegistry()
			if err := reg.Ideator("t", idea); err == nil || err.Error() != tt.err {
				t.Errorf("Ideator: got %v, want %s", err, tt.err)
			}
			if _, err := reg.LookupTool("t"); err == nil {
				t.Error("the Ideator was registered all the same")
			}
			reg.Idea("idea", idea)
			reg.Tool("upfront", json.RawMessage(`{"type":"object","_delegate":"idea","properties":{}}`))
			if err := reg.UpfrontDelegates(nil); err == nil || !strings.Contains(err.Error(), `tool "upfront": input schema: a tool's parameters are an object's properties`) {
				t.Errorf("UpfrontDelegates: %v", err)
			}
		})
	}
	// An object schema without properties of its own (a free-form input)
	// is an object all the same.
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"input","schema":{"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.NewRegistry().Ideator("free", idea); err != nil {
		t.Errorf("a free-form object input: %v", err)
	}
}

// Page 015, "Scoping a Delegate's Context": a call with no parameters
// that scopes the parent's state gives its delegate the Idea's context
// and that state, and nothing else: no empty input message, which would
// only tell the model there is nothing to say.
func TestDelegateScopedContextOfSpec(t *testing.T) {
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"system","message":"You are an expert summarizer."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("SummarizerAgent", idea)
	reg.Tool("summarizeArticle", json.RawMessage(`{"type":"object","_delegate":"SummarizerAgent","properties":{"_scopes":{"type":"array","items":{"enum":["state"]}}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"summarizeArticle","_scopes":["state"],"_outputPath":"†state.summary"}],"output":null}`,
		`{"output":"Short."}`,
		`{"calls":[],"output":"done"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"summarizeArticle"},{"type":"state","articleText":"A long and complex article..."}]`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range p.Requests()[1].Messages {
		got = append(got, string(m.Role)+": "+m.Text)
	}
	want := []string{
		"system: You are an expert summarizer.",
		"user: ## Data: ¶state\n{\"articleText\":\"A long and complex article...\"}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("the delegate's context:\n%q\nwant\n%q", got, want)
	}
	if got := lookup(t, res.Log, "†state.summary"); got != `"Short."` {
		t.Errorf("summary = %s", got)
	}
}

// A tool's _delegate names an Idea or is "anonymous". One that is not a
// string, or is empty, made a tool that was no delegate and was not
// latent either (shaped as one that runs code, without the _output the
// model would write): its calls ran whatever activity had its name, or
// failed for want of one. It is an error of the tool's definition.
func TestToolDelegateMalformed(t *testing.T) {
	for _, tt := range []struct{ delegate, err string }{
		{`5`, `agent: message 0 (tool): tool "t": _delegate names an Idea or is "anonymous", got 5`},
		{`""`, `agent: message 0 (tool): tool "t": _delegate names an Idea or is "anonymous", got ""`},
		{`{"idea":"x"}`, `agent: message 0 (tool): tool "t": _delegate names an Idea or is "anonymous", got {"idea":"x"}`},
	} {
		t.Run(tt.delegate, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("t", json.RawMessage(`{"type":"object","properties":{},"_delegate":`+tt.delegate+`}`))
			p := scripted.Solutions(`{"calls":[],"output":1}`)
			_, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"}]`))
			if err == nil || err.Error() != tt.err {
				t.Errorf("got %v\nwant %s", err, tt.err)
			}
			if n := len(p.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestDelegateTokenBudget: a delegate's sub-run may spend what the run's
// TokenBudget leaves, not the whole budget again.
func TestDelegateTokenBudget(t *testing.T) {
	reg := senderRegistry(t)
	notDone := `{"calls":[],"output":null}`
	p := scripted.New(
		// The parent's first step spends 600 of its 1000 tokens.
		scripted.Response{Solutions: []string{notDone}, Usage: usage(600)},
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"send","text":"hi","_outputPath":"†state.sent"}],"output":null}`}, Usage: usage(10)},
		// The sub-run, never done: 300 tokens a step.
		scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)},
		scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)},
		scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)},
		scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)},
	)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, TokenBudget: 1000, Concurrency: 1}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"send"},{"type":"text","text":"Send hi"}]`))
	if !errors.Is(err, agent.ErrTokenBudget) {
		t.Fatalf("err %v, want the budget spent", err)
	}
	// The sub-run counts into the run's budget, 600 of it spent before
	// the call's step: it stopped after two requests.
	if n := len(p.Requests()); n != 4 {
		t.Errorf("%d requests, want 4 (2 of the parent's, 2 of the sub-run's)", n)
	}
	if res.Usage.Input != 1210 {
		t.Errorf("usage %+v, want 1210 input tokens", res.Usage)
	}
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeError && !strings.Contains(string(m.Error), "token budget spent: used 1210 of 1000 tokens") {
			t.Errorf("the call's error: %s", m.Error)
		}
	}
}

// Delegates running at once share the run's budget: each used to have
// what was left before their step, so n of them could spend it n times.
func TestDelegatesShareTokenBudget(t *testing.T) {
	reg := senderRegistry(t)
	responses := []scripted.Response{
		scripted.Response{Solutions: []string{`{"calls":[` +
			`{"_tool":"send","text":"a","_outputPath":"†state.a"},{"_tool":"send","text":"b","_outputPath":"†state.b"},` +
			`{"_tool":"send","text":"c","_outputPath":"†state.c"},{"_tool":"send","text":"d","_outputPath":"†state.d"}],"output":null}`}, Usage: usage(100)},
	}
	// The sub-runs are never done: 300 tokens a step.
	for range 20 {
		responses = append(responses, scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)})
	}
	p := scripted.New(responses...)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, TokenBudget: 1000, Concurrency: 4}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"send"},{"type":"text","text":"Send them"}]`))
	if !errors.Is(err, agent.ErrTokenBudget) {
		t.Fatalf("err %v, want the budget spent", err)
	}
	// 100 + 3×300 reaches the budget; each of the four sub-runs may have
	// had one request under way when it did.
	if n := len(p.Requests()) - 1; n > 3+3 {
		t.Errorf("%d requests of the sub-runs, want at most 6", n)
	}
	if res.Usage.Input > 1000+3*300 {
		t.Errorf("usage %d input tokens, want at most 1900", res.Usage.Input)
	}
}

// A plan's delegates share the budget too.
func TestPlanDelegatesShareTokenBudget(t *testing.T) {
	reg := senderRegistry(t)
	var responses []scripted.Response
	for range 20 { // never done: 300 tokens a step
		responses = append(responses, scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)})
	}
	p := scripted.New(responses...)
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"send","text":"a","_outputPath":"†state.a"}`),
		json.RawMessage(`{"_tool":"send","text":"b","_outputPath":"†state.b"}`),
		json.RawMessage(`{"_tool":"send","text":"c","_outputPath":"†state.c"}`),
	}
	res, err := agent.ExecutePlan(t.Context(), agent.Config{Provider: p, Registry: reg, TokenBudget: 1000, Concurrency: 3}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeError && strings.Contains(string(m.Error), "token budget spent") {
			failed++
		}
	}
	if failed != 3 {
		t.Errorf("%d calls stopped by the budget, want 3", failed)
	}
	// 4×300 reaches the budget; each of the three sub-runs may have had
	// one request under way when it did.
	if n := len(p.Requests()); n > 4+2 {
		t.Errorf("%d requests of the sub-runs, want at most 6", n)
	}
}

// senderRegistry registers the Idea "sender" and the tool "send" that
// delegates to it, whose sub-run tests make say what the model answers.
func senderRegistry(t *testing.T) *agent.Registry {
	t.Helper()
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","properties":{"sent":{"type":"boolean"}}},"context":[{"type":"system","message":"Send it."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("sender", idea)
	reg.Tool("send", json.RawMessage(`{"type":"object","_delegate":"sender","properties":{"text":{"type":"string"}}}`))
	return reg
}

// A resumed plan's delegates count into the budget from what the run
// spent before the resume, as a resumed loop does: a budget spent before
// a crash is not given again.
func TestResumedPlanDelegatesTokenBudget(t *testing.T) {
	reg := senderRegistry(t)
	// stop interrupts the run the first time it runs: a crash after a.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stops int
	reg.Tool("stop", json.RawMessage(`{"type":"object"}`))
	reg.Activity("stop", agent.Idempotent(agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		if stops++; stops == 1 {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return agent.Value("stopped")
	})))
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"send","text":"a","_outputPath":"†state.a"}`),
		json.RawMessage(`{"_tool":"stop","after":"†state.a","_outputPath":"†state.s"}`),
		json.RawMessage(`{"_tool":"send","text":"b","after":"†state.s","_outputPath":"†state.b"}`),
	}
	st := store.NewMemory()
	// The first attempt: a's sub-run spends 900 tokens and is done.
	first := scripted.New(scripted.Response{Solutions: []string{`{"output":{"sent":true}}`}, Usage: usage(900)})
	_, err := agent.ExecutePlan(ctx, agent.Config{Provider: first, Registry: reg, TokenBudget: 1000, Concurrency: 1, Store: st, RunID: "p"}, plan, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the first attempt: %v", err)
	}
	// b's sub-run, never done, 300 tokens a step: 900 were spent, so it
	// may send one request, not four.
	var responses []scripted.Response
	for range 10 {
		responses = append(responses, scripted.Response{Solutions: []string{`{"output":null}`}, Usage: usage(300)})
	}
	p := scripted.New(responses...)
	res, err := agent.Resume(t.Context(), agent.Config{Provider: p, Registry: reg, Store: st}, "p")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("%d requests of b's sub-run after the resume, want 1", n)
	}
	if !strings.Contains(lookupError(res.Log), "token budget spent: used 1200 of 1000 tokens") {
		t.Errorf("b's error: %s", lookupError(res.Log))
	}
}

// lookupError returns the last error message of log.
func lookupError(log *message.Log) string {
	var last string
	for _, m := range log.Messages() {
		if m.Type == message.TypeError {
			last = m.Error
		}
	}
	return last
}
