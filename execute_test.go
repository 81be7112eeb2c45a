package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

func TestRunLatentCallAsksTheModel(t *testing.T) {
	// A latent tool without an inline _output: a Request with the tool's
	// _output schema produces the result (104).
	reg := agent.NewRegistry()
	reg.Tool("sentimentAnalysis", json.RawMessage(`{"type":"object","description":"Analyzes text sentiment","properties":{
		"text":{"type":"string"},"_output":{"type":"object","properties":{"sentiment":{"type":"string"}},"required":["sentiment"]}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"sentimentAnalysis","text":"This is the best!","_outputPath":"†state.sentiment"}],"output":null}`,
		`{"output":{"sentiment":"positive"}}`,
		`{"calls":[],"output":"†state.sentiment"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"sentimentAnalysis"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.sentiment.sentiment"); got != `"positive"` {
		t.Errorf("state.sentiment = %s", got)
	}
	latent := p.Requests()[1]
	if !strings.Contains(string(latent.Schema), `"sentiment"`) || strings.Contains(string(latent.Schema), `"calls"`) {
		t.Errorf("latent request schema %s", latent.Schema)
	}
	var text strings.Builder
	for _, m := range latent.Messages {
		text.WriteString(m.Text)
	}
	if !strings.Contains(text.String(), "This is the best!") || !strings.Contains(text.String(), "Analyzes text sentiment") {
		t.Errorf("latent request messages: %s", text.String())
	}
	if res.Usage.Total() != 0 && res.Steps != 2 {
		t.Errorf("steps %d", res.Steps)
	}
}

func TestRunFireAndForget(t *testing.T) {
	// An explicit call without _outputPath is not awaited by the step but
	// is tracked to completion, and nothing is written.
	reg := agent.NewRegistry()
	reg.Tool("notify", json.RawMessage(`{"type":"object","properties":{"msg":{"type":"string"}}}`))
	var ran atomic.Int32
	release := make(chan struct{})
	reg.Activity("notify", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		<-release
		ran.Add(1)
		return &agent.Result{Value: json.RawMessage(`"ok"`)}, nil
	}))
	p := scripted.Solutions(`{"calls":[{"_tool":"notify","msg":"hi"}],"output":null}`, `{"calls":[],"output":"done"}`)
	steps := 0
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"notify"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventStep {
			steps++
			if steps == 2 { // the second step started while notify still waits
				close(release)
			}
		}
		if ev.Kind == agent.EventDone && ran.Load() != 1 {
			t.Error("the run ended before the fire-and-forget call finished")
		}
	}
	if steps != 2 {
		t.Errorf("%d steps", steps)
	}
}

func TestActivityChoosesBranchAndMessages(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("verifyUser", json.RawMessage(`{"type":"object","properties":{"userId":{"type":"string"}}}`))
	reg.Tool("audit", json.RawMessage(`{"type":"object"}`))
	reg.Activity("verifyUser", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`{"reason":"unknown"}`), Branch: message.Failure}, nil
	}))
	reg.Activity("audit", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{message.Data("audit", json.RawMessage(`{"seen":true}`))}}, nil
	}))
	p := scripted.Solutions(`{"calls":[{"_tool":"verifyUser","userId":"perfect-stranger","_outputPath":"†data.user.verified || †data.user.failed"},{"_tool":"audit"}],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"verifyUser"},{"type":"tool","tool":"audit"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†data.user.failed.reason"); got != `"unknown"` {
		t.Errorf("failed branch = %s", got)
	}
	if got := lookup(t, res.Log, "†audit.seen"); got != "true" {
		t.Errorf("audit = %s", got)
	}
}

func TestRunPetFriendlyReplanning(t *testing.T) {
	// Page 012, "Adjusting a plan": the context holds the happy-path plan and
	// a new constraint; the model picks findPetFriendlyHotel instead, and the
	// plan is shown to it.
	reg := agent.NewRegistry()
	booked := &recorder{f: value(`{"ok":true}`)}
	for _, n := range []string{"bookFlight", "bookHotel", "findPetFriendlyHotel"} {
		reg.Tool(n, json.RawMessage(`{"type":"object","properties":{"destination":{"type":"string"}},"required":["destination"]}`))
		reg.Activity(n, booked)
	}
	p := scripted.Solutions(`{"calls":[{"_tool":"bookFlight","destination":"†input.destination","_outputPath":"†state.flight"},
		{"_tool":"findPetFriendlyHotel","destination":"†input.destination","_outputPath":"†state.hotel"}],"output":{"status":"booked"}}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[
		{"type":"tool","tool":"bookFlight"},{"type":"tool","tool":"bookHotel"},{"type":"tool","tool":"findPetFriendlyHotel"},
		{"type":"plan","plan":[{"_tool":"bookFlight","destination":"†input.destination"},{"_tool":"bookHotel","destination":"†input.destination"}]},
		{"type":"input","destination":"Berlin","instruction":"Actually, I'll be traveling with my dog."}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(booked.calls, ";")
	if !strings.Contains(got, `findPetFriendlyHotel {"destination":"Berlin"}`) || strings.Contains(got, "bookHotel") {
		t.Errorf("calls %q", got)
	}
	var text strings.Builder
	for _, m := range p.Requests()[0].Messages {
		text.WriteString(m.Text)
	}
	if !strings.Contains(text.String(), "## Plan") || !strings.Contains(text.String(), `"bookHotel"`) {
		t.Errorf("the plan was not shown:\n%s", text.String())
	}
	if lookup(t, res.Log, "†state.hotel.ok") != "true" {
		t.Error("hotel not written")
	}
}

func TestRunEventsOrder(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object"}`))
	reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`1`)}, nil
	}))
	p := scripted.New(scripted.Response{Solutions: []string{`{"calls":[{"_tool":"t","_outputPath":"†state.a"}],"output":1}`}, Thinking: "hmm"})
	var kinds []string
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, string(ev.Kind))
	}
	// The call may finish before or after the output streams and the
	// usage arrives; the rest of the order is fixed.
	got := strings.Join(kinds, " ")
	if !strings.HasPrefix(got, "step thinking call.queued call.started") || !strings.HasSuffix(got, "message done") ||
		strings.Index(got, "call.started") > strings.Index(got, "call.finished") || strings.Count(got, "usage") != 1 ||
		strings.Index(got, "output") > strings.Index(got, "usage") || len(kinds) != 10 {
		t.Errorf("events %q", got)
	}
}

func TestActivityResultMeetsOutputSchema(t *testing.T) {
	// An explicit tool's _output is not shown to the model, but the
	// activity's result must meet it: a result that does not is a runtime
	// error of the call, sent down the failure branch when there is one.
	reg := agent.NewRegistry()
	reg.Tool("price", json.RawMessage(`{"type":"object","properties":{"sku":{"type":"string"},
		"_output":{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}},"required":["sku"]}`))
	reg.Activity("price", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		if strings.Contains(string(c.Params), "bad") {
			return &agent.Result{Value: json.RawMessage(`{"cents":"12"}`)}, nil
		}
		return &agent.Result{Value: json.RawMessage(`{"cents":12}`)}, nil
	}))
	p := scripted.Solutions(`{"calls":[
		{"_tool":"price","sku":"good","_outputPath":"†state.good"},
		{"_tool":"price","sku":"bad","_outputPath":"†state.bad"},
		{"_tool":"price","sku":"bad2","_outputPath":"†state.ok || †state.failed"}],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"price"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.good.cents"); got != "12" {
		t.Errorf("state.good.cents = %s", got)
	}
	if strings.Contains(string(p.Requests()[0].Schema), `"cents"`) {
		t.Errorf("the model was shown the explicit tool's _output: %s", p.Requests()[0].Schema)
	}
	errs := errorTexts(res.Log)
	if len(errs) != 2 || !strings.Contains(errs[0], "runtime error in price: result does not match the tool's _output") || !strings.Contains(errs[0], "cents") {
		t.Fatalf("error messages %q", errs)
	}
	if _, err := res.Log.Lookup("state", []string{"bad"}); err == nil {
		t.Error("an invalid result was written")
	}
	if got := lookup(t, res.Log, "†state.failed.error"); !strings.Contains(got, "does not match") {
		t.Errorf("failure branch = %s", got)
	}
}

func TestBoundResultMeetsOutputSchema(t *testing.T) {
	// A bound function's result is validated against _output unless the
	// schema holds for every value of its type; either way a result that
	// breaks it is never written.
	reg := agent.NewRegistry()
	type out struct {
		Cents int `json:"cents"`
	}
	reg.Tool("loose", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},
		"_output":{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}}}`))
	reg.Tool("capped", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},
		"_output":{"type":"object","properties":{"cents":{"type":"integer","maximum":100}}}}}`))
	price := agent.Bind(func(ctx context.Context, p struct {
		N int `json:"n"`
	}) (out, error) {
		return out{Cents: p.N}, nil
	})
	reg.Activity("loose", price)
	reg.Activity("capped", price)
	p := scripted.Solutions(`{"calls":[
		{"_tool":"loose","n":500,"_outputPath":"†state.a"},
		{"_tool":"capped","n":50,"_outputPath":"†state.b"},
		{"_tool":"capped","n":500,"_outputPath":"†state.c"},
		{"_tool":"loose","n":7,"_outputPath":"†state.d"}],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"loose"},{"type":"tool","tool":"capped"}]`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"†state.a.cents": "500", "†state.b.cents": "50", "†state.d.cents": "7"} {
		if got := lookup(t, res.Log, path); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if _, err := res.Log.Lookup("state", []string{"c"}); err == nil {
		t.Error("a result above the tool's maximum was written")
	}
	errs := errorTexts(res.Log)
	if len(errs) != 1 || !strings.Contains(errs[0], "runtime error in capped: result does not match the tool's _output") {
		t.Fatalf("error messages %q", errs)
	}
}

// A result that does not meet the tool's _output is not written where
// the call writes, but it is not lost either: its error holds it, as a
// write that does not combine does, so the model and the log keep what
// the code computed (a charge made, a record created).
func TestOutputMismatchKeepsTheResult(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("charge", json.RawMessage(`{"type":"object","properties":{"cents":{"type":"integer"},
		"_output":{"type":"object","properties":{"receipt":{"type":"integer"}},"required":["receipt"]}},"required":["cents"]}`))
	reg.Activity("charge", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return agent.Value(map[string]string{"receipt": "r-981"})
	}))
	p := scripted.Solutions(`{"calls":[{"_tool":"charge","cents":500,"_outputPath":"†state.receipt"}],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"charge"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := `runtime error in charge: result does not match the tool's _output: at /receipt: expected integer, got string; the result: {"receipt":"r-981"}`
	if errs := errorTexts(res.Log); len(errs) != 1 || errs[0] != want {
		t.Errorf("errors %q\nwant %q", errs, want)
	}
}

// TestSubRequestCacheKeys: an explicit Config.CacheKey names the run's
// prefix; a latent call's and a delegate's requests start otherwise, so
// each gets a key of its own under it, the same at every step.
func TestSubRequestCacheKeys(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("sentiment", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}}`))
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"system","message":"Translate."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("translator", idea)
	reg.Tool("translate", json.RawMessage(`{"type":"object","_delegate":"translator","properties":{"text":{"type":"string"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"sentiment","text":"great","_outputPath":"†state.s"}],"output":null}`,
		`{"output":"positive"}`,
		`{"calls":[{"_tool":"translate","text":"great","_outputPath":"†state.t"}],"output":null}`,
		`{"output":"génial"}`,
		`{"calls":[],"output":"done"}`,
	)
	_, err = agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, CacheKey: "tenant-7"}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"sentiment"},{"type":"tool","tool":"translate"},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range p.Requests() {
		keys = append(keys, r.CacheKey)
	}
	want := []string{"tenant-7", "tenant-7/sentiment", "tenant-7", "tenant-7/translator", "tenant-7"}
	if !slices.Equal(keys, want) {
		t.Errorf("cache keys %q, want %q", keys, want)
	}
}

// TestAnonymousDelegateCacheKey: an anonymous delegate's sub-run, which
// has no Idea's name, takes the run's key followed by / and its tool's
// name.
func TestAnonymousDelegateCacheKey(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("guess", json.RawMessage(`{"type":"object","description":"You guess.","_delegate":"anonymous","properties":{"q":{"type":"string"},"_output":{"type":"string"}}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"guess","q":"which?","_outputPath":"†state.g"}],"output":null}`,
		`{"output":"this"}`,
		`{"calls":[],"output":"done"}`,
	)
	_, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, CacheKey: "tenant-7"}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"guess"},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range p.Requests() {
		keys = append(keys, r.CacheKey)
	}
	if want := []string{"tenant-7", "tenant-7/guess", "tenant-7"}; !slices.Equal(keys, want) {
		t.Errorf("cache keys %q, want %q", keys, want)
	}
}
