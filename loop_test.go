package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
)

var fixed = func() time.Time { return time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC) }

// recorder is an activity that records the params it ran with.
type recorder struct {
	mu    sync.Mutex
	calls []string
	f     func(args json.RawMessage) (*agent.Result, error)
}

func (r *recorder) Run(ctx context.Context, c *agent.Call) (*agent.Result, error) {
	r.mu.Lock()
	r.calls = append(r.calls, c.Tool+" "+string(c.Args()))
	r.mu.Unlock()
	return r.f(c.Args())
}

func value(s string) func(json.RawMessage) (*agent.Result, error) {
	return func(json.RawMessage) (*agent.Result, error) { return &agent.Result{Value: json.RawMessage(s)}, nil }
}

func lookup(t *testing.T, log *message.Log, expr string) string {
	t.Helper()
	v, err := ref.EvalString(log, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return string(v)
}

func TestRunRefundHappyPath(t *testing.T) {
	// Page 012, "Example: Following a Plan": two code tools wired by
	// references to the input, then the output.
	reg := agent.NewRegistry()
	rec := &recorder{f: func(args json.RawMessage) (*agent.Result, error) {
		if strings.Contains(string(args), "amount") {
			return &agent.Result{Value: json.RawMessage(`{"refundId":"r1"}`)}, nil
		}
		return &agent.Result{Value: json.RawMessage(`{"orders":5,"lastChargeback":"2025-09-10"}`)}, nil
	}}
	reg.Tool("checkBillingHistory", json.RawMessage(`{"type":"object","properties":{"customerId":{"type":"string"}},"required":["customerId"]}`))
	reg.Tool("issueRefund", json.RawMessage(`{"type":"object","properties":{"customerId":{"type":"string"},"amount":{"type":"number"}},"required":["customerId","amount"]}`))
	reg.Activity("checkBillingHistory", rec)
	reg.Activity("issueRefund", rec)
	p := scripted.Solutions(
		`{"calls":[{"_tool":"checkBillingHistory","customerId":"†input.customerId","_outputPath":"†state.billingHistory"},
		           {"_tool":"issueRefund","customerId":"†input.customerId","amount":"†input.amount","_outputPath":"†state.refund"}],"output":null}`,
		`{"calls":[],"output":{"confirmationId":"refund_xyz789","message":"The refund has been processed successfully."}}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed},
		json.RawMessage(`{"type":"object","properties":{"confirmationId":{"type":"string"},"message":{"type":"string"}}}`),
		ctxOf(t, `[{"type":"tool","tool":"checkBillingHistory"},{"type":"tool","tool":"issueRefund"},
			{"type":"input","request":"I'd like a refund for my last order.","customerId":"cust_123","amount":50.0}]`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || !strings.Contains(string(res.Solution.Output), "refund_xyz789") {
		t.Errorf("steps %d output %s", res.Steps, res.Solution.Output)
	}
	if got := lookup(t, res.Log, "†state.billingHistory.orders"); got != "5" {
		t.Errorf("billingHistory.orders = %s", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string]bool{`checkBillingHistory {"customerId":"cust_123"}`: true, `issueRefund {"customerId":"cust_123","amount":50.0}`: true}
	if len(rec.calls) != 2 || !want[rec.calls[0]] || !want[rec.calls[1]] {
		t.Errorf("activity calls %q", rec.calls)
	}
	// The second request shows the state written and the plan.
	second := p.Requests()[1]
	var text strings.Builder
	for _, m := range second.Messages {
		text.WriteString(m.Text)
	}
	if !strings.Contains(text.String(), "## Data: ¶state") || !strings.Contains(text.String(), "## Plan") || !strings.Contains(text.String(), `"lastChargeback":`) || !strings.Contains(text.String(), `"2025-09-10"`) {
		t.Errorf("second request:\n%s", text.String())
	}
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeData && m.Call != nil && m.Date != "2025-10-26T12:00:00Z" {
			t.Errorf("output date %q does not come from the clock", m.Date)
		}
	}
}

func TestRunPaymentFailureBranch(t *testing.T) {
	// Page 012, "Handling failure": the payment fails, the error goes to
	// †state.error, confirmOrder never unblocks, the next step reports.
	reg := agent.NewRegistry()
	reg.Tool("processPayment", json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`))
	reg.Tool("confirmOrder", json.RawMessage(`{"type":"object","properties":{"receipt":{"type":"object"}}}`))
	reg.Tool("reportFailure", json.RawMessage(`{"type":"object","properties":{"error":{"type":"object"}}}`))
	reg.Activity("processPayment", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("card_declined: Your card was declined.")
	}))
	confirmed := &recorder{f: value(`true`)}
	reg.Activity("confirmOrder", confirmed)
	reported := &recorder{f: value(`"reported"`)}
	reg.Activity("reportFailure", reported)
	p := scripted.Solutions(
		`{"calls":[{"_tool":"processPayment","amount":"†input.amount","_outputPath":"†state.receipt || †state.error"},
		           {"_tool":"confirmOrder","receipt":"†state.receipt","_outputPath":"†state.confirmation"}],"output":null}`,
		`{"calls":[{"_tool":"reportFailure","error":"†state.error","_outputPath":"†state.report"}],"output":{"status":"Failed"}}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed}, json.RawMessage(`{"type":"object"}`),
		ctxOf(t, `[{"type":"tool","tool":"processPayment"},{"type":"tool","tool":"confirmOrder"},{"type":"tool","tool":"reportFailure"},{"type":"input","amount":50.0}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.error.error"); !strings.Contains(got, "card_declined") {
		t.Errorf("state.error = %s", got)
	}
	if len(confirmed.calls) != 0 {
		t.Errorf("confirmOrder ran: %q", confirmed.calls)
	}
	if len(reported.calls) != 1 || !strings.Contains(reported.calls[0], "card_declined") {
		t.Errorf("reportFailure calls %q", reported.calls)
	}
	errs := errorTexts(res.Log)
	if len(errs) != 2 || !strings.Contains(errs[0]+errs[1], "never became ready") || !strings.Contains(errs[0]+errs[1], "card_declined") {
		t.Errorf("error messages %q", errs)
	}
	if string(res.Solution.Output) != `{"status":"Failed"}` {
		t.Errorf("output %s", res.Solution.Output)
	}
}

func TestRunChainsCallsWithinAStep(t *testing.T) {
	// Page 012, "Schema-guided planning": each call reads what the one
	// before wrote, in one solution; the latent detectLanguage carries its
	// result inline (eager mode).
	reg := agent.NewRegistry()
	isEnglish := &recorder{f: func(args json.RawMessage) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(fmt.Sprint(strings.Contains(string(args), `"English"`)))}, nil
	}}
	translate := &recorder{f: value(`"Hello world"`)}
	reg.Activity("isEnglish", isEnglish)
	reg.Activity("translateText", translate)
	p := scripted.Solutions(
		`{"calls":[
			{"_tool":"translateText","text":"†input.text","isEnglish":"†state.isEnglish","_outputPath":"†state.translatedText"},
			{"_tool":"isEnglish","language":"†state.language","_outputPath":"†state.isEnglish"},
			{"_tool":"detectLanguage","text":"†input.text","_outputPath":"†state.language","_output":"French"}],"output":null}`,
		`{"calls":[],"output":{"text":"Hello world"}}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed}, json.RawMessage(`{"type":"object"}`),
		ctxOf(t, `[
			{"type":"tool","tool":{"detectLanguage":{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}}}},
			{"type":"tool","tool":{"isEnglish":{"type":"object","properties":{"language":{"type":"string"}}}}},
			{"type":"tool","tool":{"translateText":{"type":"object","properties":{"text":{"type":"string"},"isEnglish":{"type":"boolean"}}}}},
			{"type":"input","text":"Bonjour le monde"},
			{"type":"state","schema":{"type":"object","properties":{"language":{"type":"string"},"isEnglish":{"type":"boolean"},"translatedText":{"type":"string"}}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state"); got != `{"isEnglish":false,"language":"French","translatedText":"Hello world"}` {
		t.Errorf("state %s", got)
	}
	if len(translate.calls) != 1 || translate.calls[0] != `translateText {"text":"Bonjour le monde","isEnglish":false}` {
		t.Errorf("translate calls %q", translate.calls)
	}
}

// TestRunPlanKeepsCallsAsWritten: the calls of a step become the plan of
// the next (012) as the model wrote them, compacted: white space outside
// strings goes, and <, > and & stay as they are, as in each output's _call.
func TestRunPlanKeepsCallsAsWritten(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("note", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`))
	reg.Activity("note", &recorder{f: value(`true`)})
	p := scripted.Solutions(
		`{"calls":[{"_tool":"note","text":"a<b & c>d","_outputPath":"†state.a"}, { "_tool" : "note",
			"text" : "x  y", "_outputPath":"†state.b" }],"output":null}`,
		`{"calls":[],"output":{}}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed}, json.RawMessage(`{"type":"object"}`),
		ctxOf(t, `[{"type":"tool","tool":"note"}]`))
	if err != nil {
		t.Fatal(err)
	}
	var plan json.RawMessage
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypePlan {
			plan = m.Plan
		}
	}
	want := `[{"_tool":"note","text":"a<b & c>d","_outputPath":"†state.a"},{"_tool":"note","text":"x  y","_outputPath":"†state.b"}]`
	if string(plan) != want {
		t.Errorf("plan %s\nwant %s", plan, want)
	}
}

func TestRunStartsCallsBeforeTheStreamEnds(t *testing.T) {
	reg := agent.NewRegistry()
	started := make(chan struct{})
	reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		if strings.Contains(string(c.Params), `"n":1`) {
			close(started)
		}
		return &agent.Result{Value: json.RawMessage(`1`)}, nil
	}))
	early := false
	first := true
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			if !first {
				yield(&provider.Chunk{Text: `{"calls":[],"output":1}`, Done: true}, nil)
				return
			}
			first = false
			if !yield(&provider.Chunk{Text: `{"calls":[{"_tool":"slow","n":1,"_outputPath":"†state.a"},`}, nil) {
				return
			}
			select { // the call must be running while the answer is still streaming
			case <-started:
				early = true
			case <-time.After(5 * time.Second):
			}
			yield(&provider.Chunk{Text: `{"_tool":"slow","n":2,"_outputPath":"†state.b"}],"output":null}`, Done: true}, nil)
		}
	})
	if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"slow"}]`)); err != nil {
		t.Fatal(err)
	}
	if !early {
		t.Error("the first call did not start before the stream ended")
	}
}

func TestRunHumanInTheLoop(t *testing.T) {
	newReg := func() (*agent.Registry, *recorder) {
		reg := agent.NewRegistry()
		rec := &recorder{f: value(`"sent"`)}
		reg.Tool("sendEmail", json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`))
		reg.Activity("sendEmail", rec)
		return reg, rec
	}
	solutions := func() *scripted.Provider {
		return scripted.Solutions(`{"calls":[{"_tool":"sendEmail","to":"ceo@example.com","_outputPath":"†state.sent"}],"output":null}`, `{"calls":[],"output":"done"}`)
	}
	for _, tt := range []struct {
		name     string
		decision agent.Decision
		wantRan  string
		wantErr  string
	}{
		{"approve", agent.Decision{}, `sendEmail {"to":"ceo@example.com"}`, ""},
		{"reject", agent.Decision{Reject: "do not email the CEO"}, "", "rejected error in sendEmail: do not email the CEO"},
		{"replace", agent.Decision{Replace: json.RawMessage(`{"_tool":"sendEmail","to":"team@example.com","_outputPath":"†state.sent"}`)}, `sendEmail {"to":"team@example.com"}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, rec := newReg()
			var seen []string
			p := solutions()
			res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Confirm: func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
				seen = append(seen, string(c.Params))
				return tt.decision, nil
			}}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"sendEmail"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != 1 {
				t.Errorf("confirm saw %q", seen)
			}
			if got := strings.Join(rec.calls, ";"); got != tt.wantRan {
				t.Errorf("ran %q, want %q", got, tt.wantRan)
			}
			errs := errorTexts(res.Log)
			if got := strings.Join(errs, ";"); got != tt.wantErr {
				t.Errorf("errors %q, want %q", got, tt.wantErr)
			}
			// The model reads it under the call's name, said once.
			shown := strings.Replace(tt.wantErr, " error in sendEmail: ", " error: ", 1)
			if tt.wantErr != "" && !strings.Contains(p.Requests()[1].Messages[len(p.Requests()[1].Messages)-1].Text, "(sendEmail) failed: "+shown) {
				t.Errorf("the rejection was not shown to the model: %+v", p.Requests()[1].Messages)
			}
		})
	}
}

func TestRunSelfCorrection(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("div", json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`))
	reg.Activity("div", agent.Bind(func(ctx context.Context, p struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}) (float64, error) {
		if p.B == 0 {
			panic("division by zero")
		}
		return p.A / p.B, nil
	}))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"div","a":1,"b":0,"_outputPath":"†state.q"},{"_tool":"div","a":"†input.name","b":1},{"_tool":"mul","a":1},{"_tool":"div","a":"†state.missing","b":1}],"output":null}`,
		`{"calls":[{"_tool":"div","a":1,"b":2,"_outputPath":"†state.q"}],"output":null,"oops":1}`,
		`{"calls":[],"output":"†state.q"}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Logger: slog.New(slog.DiscardHandler)}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"div"},{"type":"input","name":"Bob"}]`))
	if err != nil {
		t.Fatal(err)
	}
	errs := errorTexts(res.Log)
	all := strings.Join(errs, "\n")
	for _, want := range []string{"runtime error in div: panic: division by zero", "structural error in div: params: at /a: expected number, got string",
		"structural error in mul: unknown tool \"mul\"", "never became ready: param /a: ref \"†state.missing\"",
		"your answer was invalid and only its valid calls ran: at (root): property \"oops\" is not allowed"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
	// Bad calls are reported once each, as errors of those calls: not
	// again as an invalid answer.
	if n := strings.Count(all, "your answer was invalid"); n != 1 {
		t.Errorf("%d invalid-answer errors:\n%s", n, all)
	}
	if got := lookup(t, res.Log, "†state.q"); got != "0.5" {
		t.Errorf("state.q = %s", got)
	}
	// The model saw the errors of step one in step two.
	var text strings.Builder
	for _, m := range p.Requests()[1].Messages {
		text.WriteString(m.Text)
	}
	if !strings.Contains(text.String(), "division by zero") {
		t.Errorf("step two did not show the errors:\n%s", text.String())
	}
}

func TestRunLimits(t *testing.T) {
	notDone := `{"calls":[],"output":null}`
	boom := errors.New("boom")
	for _, tt := range []struct {
		name  string
		cfg   agent.Config
		want  error
		steps int    // the requests made before the run stopped
		text  string // the error's: a provider's names the step it failed
	}{
		{"max steps", agent.Config{MaxSteps: 2, Provider: scripted.Solutions(notDone, notDone, notDone)}, agent.ErrMaxSteps, 2,
			"agent: too many steps (2)"},
		{"token budget", agent.Config{TokenBudget: 15, Provider: scripted.New(
			scripted.Response{Solutions: []string{notDone}, Usage: provider.Usage{Input: 10, Output: 6}},
			scripted.Response{Solutions: []string{notDone}})}, agent.ErrTokenBudget, 1, "agent: token budget spent: used 16 of 15 tokens"},
		{"max calls", agent.Config{MaxCallsPerStep: 1, Provider: scripted.Solutions(`{"calls":[{"_tool":"t"},{"_tool":"t"}],"output":null}`)}, agent.ErrMaxCalls, 1,
			"agent: too many calls in one step (1)"},
		{"provider error", agent.Config{Provider: scripted.New(scripted.Response{Solutions: []string{notDone}},
			scripted.Response{Err: boom})}, boom, 2, "agent: step 2: provider: boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Registry = agent.NewRegistry()
			tt.cfg.Registry.Tool("t", json.RawMessage(`{"type":"object"}`))
			res, err := agent.Run(context.Background(), tt.cfg, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"text","text":"go"}]`))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if err.Error() != tt.text {
				t.Errorf("error %q, want %q", err, tt.text)
			}
			if res == nil || res.Log == nil || res.Log.Len() < 2 {
				t.Fatalf("the log was not returned intact: %+v", res)
			}
			if res.Steps != tt.steps {
				t.Errorf("result steps %d, want %d", res.Steps, tt.steps)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
	var stopped atomic.Bool
	reg.Activity("wait", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		<-ctx.Done()
		stopped.Store(true)
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := scripted.Solutions(`{"calls":[{"_tool":"wait","_outputPath":"†state.w"}],"output":null}`)
	for ev, err := range agent.Events(ctx, agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"wait"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		// Started comes before the call runs; by the end of the request
		// it runs.
		if ev.Kind == agent.EventUsage {
			cancel()
			break
		}
	}
	if !stopped.Load() {
		t.Error("breaking out of Events did not stop and wait for the running call")
	}
}

func TestRunFallbackUnblocksOnEitherKind(t *testing.T) {
	// The call waits on †input.x || †state.y; a state write must wake it.
	reg := agent.NewRegistry()
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	reg.Tool("b", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}}}`))
	rec := &recorder{f: value(`7`)}
	reg.Activity("a", rec)
	reg.Activity("b", rec)
	p := scripted.Solutions(`{"calls":[{"_tool":"b","v":"†input.x || †state.y","_outputPath":"†state.z"},{"_tool":"a","_outputPath":"†state.y"}],"output":1}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"},{"type":"input","w":1}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, res.Log, "†state.z"); got != "7" {
		t.Errorf("state.z = %s (calls %q)", got, rec.calls)
	}
}

func TestRunLazyPlanOnly(t *testing.T) {
	// 012 lazy mode: with a lazy plan message the model only plans; the
	// run returns the calls unexecuted, they can be approved and run.
	reg := agent.NewRegistry()
	rec := &recorder{f: value(`{"ok":true}`)}
	reg.Tool("processPayment", json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`))
	reg.Activity("processPayment", rec)
	p := scripted.Solutions(`{"calls":[{"_tool":"processPayment","amount":"†input.amount","_outputPath":"†state.receipt || †state.error"}],"output":null}`)
	msgs := ctxOf(t, `[{"type":"tool","tool":"processPayment"},{"type":"input","amount":50.0},{"type":"plan","mode":"lazy","plan":[]}]`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 0 || len(res.Plan) != 1 || res.Steps != 1 {
		t.Fatalf("ran %q, plan %s, steps %d", rec.calls, res.Plan, res.Steps)
	}
	if !strings.Contains(p.Requests()[0].Messages[len(p.Requests()[0].Messages)-1].Text, "Lazy mode: only plan") {
		t.Error("the model was not told to only plan")
	}
	// Approve and run.
	out, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, res.Plan, res.Log.Messages())
	if err != nil {
		t.Fatal(err)
	}
	if lookup(t, out.Log, "†state.receipt.ok") != "true" || len(rec.calls) != 1 {
		t.Errorf("executing the approved plan: calls %q", rec.calls)
	}
}

func TestRunCarriedRequestsMatchFreshOnes(t *testing.T) {
	// A loop carries each request to the next step and handles only the
	// messages appended since: every request must equal one prepared from
	// the whole log. Step 1 writes to an identity rendered already and
	// fails a call; step 2's call appends a tool and data that describes
	// the state, so the composed schema and a rendered block change.
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	reg.Tool("w", json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"}}}`))
	reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		if strings.Contains(string(c.Params), `"x":2`) {
			return nil, errors.New("two is not allowed")
		}
		return &agent.Result{Value: json.RawMessage(`{"y":1}`)}, nil
	}))
	reg.Activity("more", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{
			{Type: message.TypeTool, Tool: json.RawMessage(`"w"`)},
			{Type: message.TypeData, Kind: "state", Data: json.RawMessage(`{"b":true}`), Description: "What was done."},
			{Type: message.TypeData, Kind: "notes", Data: json.RawMessage(`{"n":1}`)},
		}}, nil
	}))
	reg.Tool("more", json.RawMessage(`{"type":"object","properties":{}}`))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"},{"_tool":"t","x":2,"_outputPath":"†state.c"}],"output":null}`,
		`{"calls":[{"_tool":"more","_outputPath":"†state.m"},{"_tool":"t","x":3,"_outputPath":"†result"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	)
	msgs := ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"tool","tool":"more"},
		{"type":"data","kind":"state","data":{"start":1}},{"type":"text","text":"go"}]`)
	out := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	cfg := agent.Config{Provider: p, Registry: reg, Clock: fixed, Concurrency: 1}
	log := append([]message.Message(nil), msgs...)
	var want []provider.Request
	for ev, err := range agent.Events(context.Background(), cfg, out, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case agent.EventStep:
			fresh := scripted.Solutions(`{"calls":[],"output":null}`)
			c := cfg
			c.Provider, c.CallbackPath, c.MaxRepairs = fresh, "calls", -1
			if _, err := agent.Request(context.Background(), c, out, log); err != nil {
				t.Fatal(err)
			}
			want = append(want, fresh.Requests()[0])
		case agent.EventMessage:
			log = append(log, *ev.Message)
		}
	}
	got := p.Requests()
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("%d requests, %d fresh ones; want 3", len(got), len(want))
	}
	for i := range got {
		// Each request ends with a message marked stable; a loop's keep
		// the marks of the steps before (those prefixes stay stable too).
		if n := len(got[i].Messages); !got[i].Messages[n-1].Stable {
			t.Errorf("request %d: the last message is not marked stable", i+1)
		}
		g, _ := json.Marshal(unmarked(got[i]))
		w, _ := json.Marshal(unmarked(want[i]))
		if string(g) != string(w) {
			t.Errorf("request %d:\n%s\nwant\n%s", i+1, g, w)
		}
	}
	described := slices.ContainsFunc(got[2].Messages, func(m provider.Message) bool { return strings.Contains(m.Text, "What was done.") })
	if !strings.Contains(string(got[2].Schema), `"const":"w"`) || !described {
		t.Errorf("the third request misses the new tool or description:\n%+v", got[2].Messages)
	}
}

// unmarked returns req with no message marked stable.
func unmarked(req provider.Request) provider.Request {
	req.Messages = slices.Clone(req.Messages)
	for i := range req.Messages {
		req.Messages[i].Stable = false
	}
	return req
}

func TestRunUnblocksOnInstanceData(t *testing.T) {
	// b waits for †state.v, which only instance i1 has: a's write must
	// wake it, as b reads its instance before global data.
	reg := agent.NewRegistry()
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	reg.Tool("b", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}}}`))
	reg.Activity("a", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`7`)}, nil
	}))
	reg.Activity("b", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: c.Args()}, nil
	}))
	p := scripted.Solutions(`{"calls":[
		{"_tool":"b","_instance":"i1","v":"†state.v","_outputPath":"†state.got"},
		{"_tool":"a","_instance":"i1","_outputPath":"†state.v"}],"output":"x"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"string"}`),
		ctxOf(t, `[{"type":"tool","tool":"a"},{"type":"tool","tool":"b"}]`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := res.Log.Instance("i1").Lookup("state", []string{"got", "v"})
	if err != nil || string(v) != "7" {
		t.Errorf("i1 state.got.v = %s, %v", v, err)
	}
}

// TestRunLogMatchesEvents checks that Run, which appends call outputs to
// its log directly, leaves the log Events leaves, where every output is
// a message: single, branching and fanned-out paths, a branch chosen by
// the activity, an instance, a result that is not JSON, messages an
// activity appends itself, and a latent call.
func TestRunLogMatchesEvents(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		switch {
		case strings.Contains(string(c.Params), `"x":2`):
			return nil, errors.New("two is not allowed")
		case strings.Contains(string(c.Params), `"x":3`):
			return &agent.Result{Value: json.RawMessage(`{"why":"three"}`), Branch: 1}, nil
		case strings.Contains(string(c.Params), `"x":4`):
			return &agent.Result{Value: json.RawMessage(`{"y":`)}, nil
		case strings.Contains(string(c.Params), `"x":5`):
			return &agent.Result{Messages: []message.Message{message.Data("notes", json.RawMessage(`{"five":true}`))}}, nil
		}
		return &agent.Result{Value: json.RawMessage(`{"y":1}`)}, nil
	}))
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"integer"}}}`))
	answers := []string{
		`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"},{"_tool":"t","x":2,"_outputPath":"†state.ok || †state.failed"},
			{"_tool":"t","x":3,"_outputPath":"†state.ok || †state.other"},{"_tool":"t","x":1,"_outputPath":"†state.b && †notes.b"},
			{"_tool":"t","x":1,"_instance":"i1","_outputPath":"†state.c"},{"_tool":"t","x":4,"_outputPath":"†state.d"},
			{"_tool":"t","x":5},{"_tool":"guess","_output":7,"_outputPath":"†state.g"}],"output":null}`,
		`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a.more"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	}
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}, {Type: message.TypeTool, Tool: json.RawMessage(`"guess"`)},
		message.Data("state", json.RawMessage(`{"start":1}`)), message.Text("go")}
	out := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	cfg := agent.Config{Registry: reg, Clock: fixed, Concurrency: 1}
	cfg.Provider = scripted.Solutions(answers...)
	res, err := agent.Run(context.Background(), cfg, out, msgs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider = scripted.Solutions(answers...)
	var want *agent.RunResult
	outputs := 0
	for ev, err := range agent.Events(context.Background(), cfg, out, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventMessage && ev.Message.OutputPath != "" {
			outputs++
		}
		if ev.Kind == agent.EventDone {
			want = ev.Result
		}
	}
	got, wantMsgs := res.Log.Messages(), want.Log.Messages()
	if !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("Run's log:\n%s\nEvents' log:\n%s", marshalAll(got), marshalAll(wantMsgs))
	}
	if outputs < 7 {
		t.Errorf("%d output messages, want at least 7", outputs)
	}
	for _, id := range []message.Identity{{Kind: "state"}, {Kind: "notes"}, {Kind: "state", Instance: "i1"}} {
		g, _, _ := res.Log.Value(id)
		w, _, _ := want.Log.Value(id)
		if string(g) != string(w) {
			t.Errorf("Value(%v) = %s, want %s", id, g, w)
		}
	}
}

func marshalAll(msgs []message.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		j, _ := json.Marshal(m)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestRunRecycledStateIsClean checks that a run's state, which the next
// run reuses, carries nothing over: runs that leave calls waiting, write
// state or fail, in any order, each send the requests and leave the log
// of a run on its own.
func TestRunRecycledStateIsClean(t *testing.T) {
	reg, msgs := func() (*agent.Registry, []message.Message) {
		reg := agent.NewRegistry()
		reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
		reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`{"y":1}`)}, nil
		}))
		return reg, []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}, message.Text("go")}
	}()
	out := json.RawMessage(`{"type":"object"}`)
	scenarios := [][]string{
		{`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"},{"_tool":"t","x":"†state.never","_outputPath":"†state.b"}],"output":null}`,
			`{"calls":[],"output":{"done":true}}`},
		{`{"calls":[{"_tool":"t","x":2,"_outputPath":"†notes.c"}],"output":null}`, `{"calls":[],"output":{"ok":1}}`},
		{`{"calls":[{"_tool":"nope"}],"output":null}`, `not json`, `{"calls":[],"output":{}}`},
	}
	logOf := func(answers []string) string {
		p := scripted.Solutions(answers...)
		cfg := agent.Config{Provider: p, Registry: reg, Clock: fixed, Concurrency: 1}
		res, err := agent.Run(context.Background(), cfg, out, msgs)
		sent, _ := json.Marshal(p.Requests()) // what the model was asked, step by step
		if err != nil {
			return "error: " + err.Error() + "\n" + string(sent)
		}
		return marshalAll(res.Log.Messages()) + string(sent)
	}
	var alone []string
	for _, s := range scenarios {
		alone = append(alone, logOf(s))
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0, 0, 2}} {
		for _, i := range order {
			if got := logOf(scenarios[i]); got != alone[i] {
				t.Errorf("scenario %d after others:\n%s\nalone:\n%s", i, got, alone[i])
			}
		}
	}
}

// TestLoopAnswerCut: a step's answer cut at the output token limit runs
// the calls written before the cut, and the next step tells the model it
// was cut, so that it writes less at once.
func TestLoopAnswerCut(t *testing.T) {
	p := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":[1,2,`}, FinishReason: "length"},
		scripted.Response{Solutions: []string{`{"calls":[],"output":{"done":true}}`}})
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: echoReg(), Clock: fixed}, anyOut,
		ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if a, err := res.Log.Lookup("state", ref.Path{"a"}); err != nil || string(a) != "1" {
		t.Errorf("state.a = %s, %v: the call written before the cut did not run", a, err)
	}
	reqs := p.Requests()
	if text := fmt.Sprint(reqs[1].Messages); !strings.Contains(text, "reached the output token limit and was cut off") {
		t.Errorf("the next step does not say the answer was cut:\n%s", text)
	}
}

// The call Confirm puts in another's place is not the model's: when it
// cannot run, its error says so, with why and where, as the model reads
// it. Confirm answered now, so a reference of it that does not resolve
// now fails it.
func TestConfirmReplacementErrors(t *testing.T) {
	for _, tt := range []struct{ name, replace, want string }{
		{"not a call", `{"_tool":`,
			`structural error: the call that Confirm put in its place: a call must be a JSON object`},
		{"unknown tool", `{"_tool":"ghost","v":1,"_outputPath":"†state.x"}`,
			`structural error in ghost: the call that Confirm put in its place: unknown tool "ghost" (tools: [put])`},
		{"reference", `{"_tool":"put","v":"†state.nothing","_outputPath":"†state.x"}`,
			`structural error in put: the call that Confirm put in its place: param /v: ref "†state.nothing": not found: unknown kind "state"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.Solutions(`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.x"}],"output":null}`, `{"calls":[],"output":{"done":true}}`)
			cfg := agent.Config{Registry: echoReg(), Provider: p, Confirm: func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
				return agent.Decision{Replace: json.RawMessage(tt.replace)}, nil
			}}
			res, err := agent.Run(context.Background(), cfg, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if got := errorTexts(res.Log); len(got) != 1 || got[0] != tt.want {
				t.Errorf("errors %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A call of a step that reads what a call before it in the step writes
// waits for that call, in its parameters or its _scopes, even where the
// path has a value already: it reads the value written, not the one from
// before, however many calls run at once. A call of another instance, or
// one that reads elsewhere, does not wait.
func TestLoopReaderWaitsForWriterOfItsStep(t *testing.T) {
	for _, tt := range []struct {
		name, call, want string
	}{
		{"a parameter", `{"_tool":"read","_instance":"①","v":"†state.x","_outputPath":"†state.seen"}`, `"new"`},
		{"a scope", `{"_tool":"read","_instance":"①","_scopes":["†state.x"],"v":"†state.x","_outputPath":"†state.seen"}`, `"new"`},
		{"below the path written", `{"_tool":"read","_instance":"①","v":"†state","_outputPath":"†data.seen"}`, `{"x":"new","y":"y"}`},
		{"a fallback", `{"_tool":"read","_instance":"①","v":"†state.x || †input.d","_outputPath":"†state.seen"}`, `"new"`},
		{"another instance", `{"_tool":"read","_instance":"②","v":"†state.x","_outputPath":"†state.seen"}`, `"old ②"`},
		{"elsewhere", `{"_tool":"read","_instance":"①","v":"†state.y","_outputPath":"†state.seen"}`, `"y"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("write", json.RawMessage(`{"type":"object","properties":{}}`))
			reg.Activity("write", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				time.Sleep(20 * time.Millisecond) // a reader that does not wait starts meanwhile
				return &agent.Result{Value: json.RawMessage(`"new"`)}, nil
			}))
			reg.Tool("read", json.RawMessage(`{"type":"object","properties":{"v":{},"_scopes":{"type":"array","items":{"type":"string"}}}}`))
			reg.Activity("read", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				var p struct{ V json.RawMessage }
				_ = json.Unmarshal(c.Args(), &p)
				return &agent.Result{Value: p.V}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"write","_instance":"①","_outputPath":"†state.x"},`+tt.call+`],"output":null}`, `{"calls":[],"output":1}`)
			res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Concurrency: 4}, json.RawMessage(`{}`),
				ctxOf(t, `[{"type":"tool","tool":"write"},{"type":"tool","tool":"read"},{"type":"input","d":"d"},
					{"type":"state","x":"old","y":"y"},{"type":"state","_instance":"①","x":"old ①"},{"type":"state","_instance":"②","x":"old ②"}]`))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errorTexts(res.Log) {
				t.Errorf("error message: %s", e)
			}
			instance := "①"
			if strings.Contains(tt.call, `"②"`) {
				instance = "②"
			}
			at := "†state.seen"
			if strings.Contains(tt.call, "†data.seen") {
				at = "†data.seen"
			}
			if got := strictValue(t, res.Log, instance, at); got != tt.want {
				t.Errorf("the reader got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestRunActivityGoexit runs an activity that ends its goroutine with
// runtime.Goexit, as t.Fatal in a test's tool does: the call fails with
// an error that says so, and the run goes on, the other call's output
// kept, rather than waiting forever for a call that will never finish.
func TestRunActivityGoexit(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("quit", json.RawMessage(`{"type":"object"}`))
	reg.Activity("quit", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		runtime.Goexit()
		return nil, nil
	}))
	reg.Tool("ok", json.RawMessage(`{"type":"object"}`))
	reg.Activity("ok", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return agent.Value("fine")
	}))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"quit","_outputPath":"†state.q || †state.failed"},{"_tool":"ok","_outputPath":"†state.ok"}],"output":null}`,
		`{"calls":[],"output":{}}`,
	)
	type ran struct {
		res *agent.RunResult
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed},
			json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"tool","tool":"quit"},{"type":"tool","tool":"ok"}]`))
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run still waits for the call that called runtime.Goexit")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := "runtime error in quit: the activity called runtime.Goexit and did not return"
	if errs := errorTexts(r.res.Log); !slices.Contains(errs, want) {
		t.Errorf("errors %q, want %q", errs, want)
	}
	if got := lookup(t, r.res.Log, "†state.failed"); got != `{"error":"`+want+`"}` {
		t.Errorf("state.failed = %s", got)
	}
	if got := lookup(t, r.res.Log, "†state.ok"); got != `"fine"` {
		t.Errorf("state.ok = %s", got)
	}
}

// lostError is an error type whose Error method reads through its
// pointer, as most do.
type lostError struct{ msg string }

func (e *lostError) Error() string { return e.msg }

// TestRunActivityErrorPanics runs an activity that returns a nil
// *lostError as its error, Go's typed nil, which is not a nil error and
// whose Error method panics: the call fails with an error that says so,
// rather than the panic taking the program down.
func TestRunActivityErrorPanics(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("find", json.RawMessage(`{"type":"object"}`))
	reg.Activity("find", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		var err *lostError // nothing went wrong, but an error it is
		return nil, err
	}))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"find","_outputPath":"†state.found || †state.failed"}],"output":null}`,
		`{"calls":[],"output":{}}`,
	)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed},
		json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"tool","tool":"find"}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := "runtime error in find: the activity returned an error, a *agent_test.lostError, whose Error method panicked: " +
		"runtime error: invalid memory address or nil pointer dereference"
	if errs := errorTexts(res.Log); !slices.Equal(errs, []string{want}) {
		t.Errorf("errors %q, want %q", errs, want)
	}
	if got := lookup(t, res.Log, "†state.failed.error"); got != strconv.Quote(want) {
		t.Errorf("state.failed.error = %s", got)
	}
}

// Confirm is the program's code, called by the run: a panic in it fails
// the run as an error of Confirm would, with the log as it was, rather
// than unwinding through Run into the program.
func TestConfirmPanics(t *testing.T) {
	p := scripted.Solutions(`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.x"}],"output":null}`, `{"calls":[],"output":{"done":true}}`)
	cfg := agent.Config{Registry: echoReg(), Provider: p, Confirm: func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
		panic("no reviewer on duty")
	}}
	res, err := agent.Run(context.Background(), cfg, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`))
	if err == nil || !strings.Contains(err.Error(), "agent: confirm: panic: no reviewer on duty") {
		t.Fatalf("err %v, want Confirm's panic", err)
	}
	if res == nil || len(res.Log.Messages()) == 0 {
		t.Errorf("the run's log is lost")
	}
}
