package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
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
	"github.com/google/go-cmp/cmp"
)

// planFixture is a file of testdata/plan: a plan and the context it runs
// in.
type planFixture struct {
	Plan    []json.RawMessage `json:"plan"`
	Context json.RawMessage   `json:"context"`
}

func loadPlan(t *testing.T, name string) ([]json.RawMessage, []message.Message) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "plan", name))
	if err != nil {
		t.Fatal(err)
	}
	var f planFixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f.Plan, planCtx(t, string(f.Context))
}

func planCtx(t *testing.T, s string) []message.Message {
	t.Helper()
	if s == "" {
		return nil
	}
	msgs, err := message.ParseContext([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func planOf(t *testing.T, s string) []json.RawMessage {
	t.Helper()
	var plan []json.RawMessage
	if err := json.Unmarshal([]byte(s), &plan); err != nil {
		t.Fatal(err)
	}
	return plan
}

// planGolden compares got with testdata/plan/name, rewriting it with -update.
func planGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "plan", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(got, string(want)); d != "" {
		t.Errorf("%s (-got +want):\n%s", name, d)
	}
}

// ran records the calls activities ran, as "tool args".
type ran struct {
	mu    sync.Mutex
	calls []string
}

func (r *ran) add(c *agent.Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c.Tool+" "+string(c.Args()))
}

func (r *ran) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.calls))
}

// do registers an activity under name that records its calls and answers
// with f.
func do(reg *agent.Registry, rec *ran, name string, f func(c *agent.Call) (*agent.Result, error)) {
	reg.Activity(name, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		rec.add(c)
		return f(c)
	}))
}

func answer(v string) func(*agent.Call) (*agent.Result, error) {
	return func(*agent.Call) (*agent.Result, error) { return &agent.Result{Value: json.RawMessage(v)}, nil }
}

// specRegistry binds code to every tool of the examples of page 012.
func specRegistry(payFails bool) (*agent.Registry, *ran) {
	reg, rec := agent.NewRegistry(), &ran{}
	do(reg, rec, "checkBillingHistory", answer(`{"orders":5,"lastChargeback":"2025-09-10"}`))
	do(reg, rec, "issueRefund", answer(`{"confirmationId":"refund_xyz789"}`))
	do(reg, rec, "bookFlight", answer(`"flight booked"`))
	do(reg, rec, "bookHotel", answer(`"hotel booked"`))
	do(reg, rec, "findPetFriendlyHotel", answer(`"pet-friendly hotel booked"`))
	do(reg, rec, "processPayment", func(*agent.Call) (*agent.Result, error) {
		if payFails {
			return nil, errors.New("card_declined: Your card was declined.")
		}
		return &agent.Result{Value: json.RawMessage(`{"receiptId":"rcpt_1"}`)}, nil
	})
	do(reg, rec, "confirmOrder", answer(`true`))
	do(reg, rec, "reportFailure", answer(`"reported"`))
	do(reg, rec, "detectLanguage", answer(`"French"`))
	do(reg, rec, "isEnglish", func(c *agent.Call) (*agent.Result, error) {
		return agent.Value(strings.Contains(string(c.Args()), `"English"`))
	})
	do(reg, rec, "translateText", answer(`"Hello world"`))
	return reg, rec
}

// planErrors returns the texts of the error messages of a log.
func planErrors(log *message.Log) []string {
	errs := errorTexts(log)
	return errs
}

func stateOf(t *testing.T, src ref.Source) string {
	t.Helper()
	v, err := ref.EvalString(src, "†state")
	if errors.Is(err, ref.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

var fixedClock = func() time.Time { return time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC) }

func TestExecutePlanSpecExamples(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fixture   string
		payFails  bool
		wantCalls []string
		wantState string
		wantErrs  []string
	}{
		{
			name:    "refund happy path",
			fixture: "refund.json",
			wantCalls: []string{`checkBillingHistory {"customerId":"cust_123"}`,
				`issueRefund {"customerId":"cust_123","amount":50.0}`},
			wantState: `{"billingHistory":{"lastChargeback":"2025-09-10","orders":5},"refund":{"confirmationId":"refund_xyz789"}}`,
		},
		{
			name:      "pet-friendly hotel replanning",
			fixture:   "hotel.json",
			wantCalls: []string{`bookFlight {"destination":"Berlin"}`, `findPetFriendlyHotel {"destination":"Berlin"}`},
		},
		{
			name:      "payment succeeds",
			fixture:   "payment.json",
			wantCalls: []string{`confirmOrder {"receipt":{"receiptId":"rcpt_1"}}`, `processPayment {"amount":50.0}`},
			wantState: `{"confirmation":true,"receipt":{"receiptId":"rcpt_1"}}`,
		},
		{
			name:      "payment fails to the error branch",
			fixture:   "payment.json",
			payFails:  true,
			wantCalls: []string{`processPayment {"amount":50.0}`},
			wantState: `{"error":{"error":"runtime error in processPayment: card_declined: Your card was declined."}}`,
			wantErrs: []string{
				"runtime error in processPayment: card_declined: Your card was declined.",
				`structural error in confirmOrder: never became ready: param /receipt: ref "†state.receipt" at path "receipt": not found`,
			},
		},
		{
			name:      "payment failure replanned",
			fixture:   "payment_replan.json",
			wantCalls: []string{`reportFailure {"error":{"code":"card_declined","message":"Your card was declined."}}`},
			wantState: `{"error":{"code":"card_declined","message":"Your card was declined."},"report":"reported"}`,
		},
		{
			name:    "schema-guided planning",
			fixture: "language.json",
			wantCalls: []string{`detectLanguage {"text":"Bonjour le monde"}`, `isEnglish {"language":"French"}`,
				`translateText {"text":"Bonjour le monde","isEnglish":false}`},
			wantState: `{"isEnglish":false,"language":"French","translatedText":"Hello world"}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, msgs := loadPlan(t, tt.fixture)
			reg, rec := specRegistry(tt.payFails)
			res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Clock: fixedClock}, plan, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(rec.sorted(), tt.wantCalls); d != "" {
				t.Errorf("activity calls (-got +want):\n%s", d)
			}
			if got := stateOf(t, res.Log); got != tt.wantState {
				t.Errorf("state %s, want %s", got, tt.wantState)
			}
			if d := cmp.Diff(planErrors(res.Log), tt.wantErrs); d != "" {
				t.Errorf("error messages (-got +want):\n%s", d)
			}
			last, _, ok := agent.LastPlan(res.Log.Messages())
			if !ok || len(last) != len(plan) {
				t.Errorf("the log does not end with the plan: %v", last)
			}
			if res.Log.Len() < len(msgs) || res.Solution != nil || res.Steps != 0 {
				t.Errorf("result %+v", res)
			}
			for _, m := range res.Log.Messages()[len(msgs):] {
				if m.Type == message.TypeData && m.Date != "2025-10-26T12:00:00Z" {
					t.Errorf("output date %q does not come from the clock", m.Date)
				}
			}
		})
	}
}

func TestExecutePlanChainOrder(t *testing.T) {
	// The calls of the schema-guided example, given in reverse: each still
	// waits for the one whose output it reads.
	plan, msgs := loadPlan(t, "language.json")
	slices.Reverse(plan)
	reg, _ := specRegistry(false)
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, m := range res.Log.Messages()[len(msgs):] {
		if m.Type == message.TypeData {
			written = append(written, m.OutputPath)
		}
	}
	want := []string{"†state.language", "†state.isEnglish", "†state.translatedText"}
	if d := cmp.Diff(written, want); d != "" {
		t.Errorf("outputs (-got +want):\n%s", d)
	}
}

// A call that reads through its _scopes what another call of the plan
// writes waits for it, as a reader of the same reference in its
// parameters does: otherwise it would see the value from before the
// write, or not, as the calls happen to be scheduled.
func TestExecutePlanScopeWaitsForWriter(t *testing.T) {
	for _, tt := range []struct{ name, tool, call string }{
		{"requested", `{"type":"object","properties":{"_scopes":{"type":"array","items":{"type":"string"}}}}`, `{"_tool":"read","_scopes":["†state.x"],"_outputPath":"†state.seen"}`},
		{"provisioned", `{"type":"object","properties":{"_scopes":{"const":["†state.x"]}}}`, `{"_tool":"read","_outputPath":"†state.seen"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("write", json.RawMessage(`{"type":"object","properties":{}}`))
			reg.Activity("write", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				time.Sleep(20 * time.Millisecond) // the reader would start meanwhile
				return &agent.Result{Value: json.RawMessage(`"new"`)}, nil
			}))
			reg.Tool("read", json.RawMessage(tt.tool))
			reg.Activity("read", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				seen, err := message.NewLog(c.Context()...)
				if err != nil {
					return nil, err
				}
				v, err := ref.EvalString(seen, "†state.x")
				return &agent.Result{Value: v}, err
			}))
			plan := planOf(t, `[{"_tool":"write","_outputPath":"†state.x"},`+tt.call+`]`)
			res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Concurrency: 4}, plan,
				planCtx(t, `[{"type":"state","x":"old"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := ref.EvalString(res.Log, "†state.seen"); string(got) != `"new"` {
				t.Errorf("the reader saw %s, want the writer's \"new\"", got)
			}
			graph, err := agent.PlanGraph(plan)
			if err != nil {
				t.Fatal(err)
			}
			if want := "c0 -->|state.x| c1"; tt.name == "requested" && !strings.Contains(graph, want) {
				t.Errorf("the graph has no %q:\n%s", want, graph)
			}
		})
	}
}

func TestValidatePlan(t *testing.T) {
	const tools = `{"type":"tool","tool":{"t":{"type":"object","properties":{"x":{},"n":{"type":"number"}}}}}`
	for _, tt := range []struct {
		name    string
		context string
		plan    string
		want    []string
		is      []error
		cycle   []int
	}{
		{
			name:    "unknown tool",
			context: `[` + tools + `]`,
			plan:    `[{"_tool":"t"},{"_tool":"nope","x":1}]`,
			want:    []string{`call 1 (nope): unknown tool "nope" (tools: t, reg)`},
			is:      []error{agent.ErrUnknownTool},
		},
		{
			name:    "cycle of two",
			context: `[` + tools + `]`,
			plan:    `[{"_tool":"t","x":"†state.b","_outputPath":"†state.a"},{"_tool":"t","x":"†state.a","_outputPath":"†state.b"}]`,
			want:    []string{"call 0 (t) param /x ref †state.b: dependency cycle: 0 (t) → 1 (t) → 0 (t)"},
			is:      []error{agent.ErrCycle},
			cycle:   []int{0, 1, 0},
		},
		{
			name:    "cycle of three",
			context: `[` + tools + `,{"type":"input","q":1}]`,
			plan: `[{"_tool":"t","x":"†input.q","_outputPath":"†state.z"},
				{"_tool":"t","x":"†state.c","_outputPath":"†state.a"},{"_tool":"t","x":"†state.a","_outputPath":"†state.b"},
				{"_tool":"t","x":"†state.b","_outputPath":"†state.c"}]`,
			want:  []string{"call 1 (t) param /x ref †state.c: dependency cycle: 1 (t) → 2 (t) → 3 (t) → 1 (t)"},
			is:    []error{agent.ErrCycle},
			cycle: []int{1, 2, 3, 1},
		},
		{
			name:    "self-reference through a prefix",
			context: `[` + tools + `]`,
			plan:    `[{"_tool":"t","x":"†state.user","_outputPath":"†state.user.name"}]`,
			want:    []string{"call 0 (t) param /x ref †state.user: dependency cycle: 0 (t) → 0 (t)"},
			is:      []error{agent.ErrCycle},
			cycle:   []int{0, 0},
		},
		{
			name:    "unsatisfiable reference",
			context: `[` + tools + `,{"type":"state","a":1}]`,
			plan:    `[{"_tool":"t","x":{"deep":["†state.missing"]},"_outputPath":"†state.b"},{"_tool":"t","x":"†state.b"}]`,
			want:    []string{"call 0 (t) param /x/deep/0 ref †state.missing: unsatisfiable reference: no call writes it and the context has no value there"},
			is:      []error{agent.ErrUnsatisfiable},
		},
		{
			name:    "reference satisfied by the context",
			context: `[` + tools + `,{"type":"input","customer":{"id":"c1"}}]`,
			plan:    `[{"_tool":"t","x":"†input.customer.id"},{"_tool":"t","x":"†input"}]`,
		},
		{
			name:    "reference satisfied by a prefix write",
			context: `[` + tools + `]`,
			plan:    `[{"_tool":"t","x":"†state.user.name"},{"_tool":"t","_outputPath":"†state.user"},{"_tool":"t","x":"†state","_outputPath":"†data.all"}]`,
		},
		{
			name:    "a fallback satisfies",
			context: `[` + tools + `,{"type":"input","d":1}]`,
			plan:    `[{"_tool":"t","x":"†state.missing || †input.d"}]`,
		},
		{
			name:    "a gate needs every reference",
			context: `[` + tools + `,{"type":"input","d":1}]`,
			plan:    `[{"_tool":"t","x":"†input.d && †state.missing || †state.other"}]`,
			want:    []string{"call 0 (t) param /x ref †state.missing: unsatisfiable reference: no call writes it and the context has no value there"},
			is:      []error{agent.ErrUnsatisfiable},
		},
		{
			name:    "registry tool",
			context: `[]`,
			plan:    `[{"_tool":"reg","y":"two"}]`,
			want:    []string{"call 0 (reg): invalid call: at /y: expected null or number, got string"},
			is:      []error{agent.ErrInvalidCall},
		},
		{
			name:    "malformed calls",
			context: `[` + tools + `]`,
			plan: `["t",{"x":1},{"_tool":5},{"_tool":"t","_outputPath":"state.a"},{"_tool":"t","_outputMethod":"replace"},
				{"_tool":"t","x":"†state..a"},{"_tool":"t","n":"five"},{"_tool":"t","n":"†input.n"},{"_tool":"t","x":"††literal"}]`,
			want: []string{
				"call 0: invalid call: a call must be a JSON object, got a string",
				"call 1: invalid call: the call has no _tool",
				"call 2: invalid call: _tool must be a string, got a number",
				`call 3 (t) param /_outputPath: ref "state.a": syntax error: expected a reference starting with † but found "s"`,
				`call 4 (t) param /_outputMethod: ref: unknown output method "replace" (want set, merge, assign, push or concat)`,
				`call 5 (t) param /x: ref "†state..a" at offset 9: syntax error: empty path segment`,
				"call 6 (t): invalid call: at /n: expected null or number, got string",
				"call 7 (t) param /n ref †input.n: unsatisfiable reference: no call writes it and the context has no value there",
			},
			is: []error{agent.ErrInvalidCall, ref.ErrSyntax, ref.ErrMethod, agent.ErrUnsatisfiable},
		},
		{
			name: "instances",
			context: `[` + tools + `,{"type":"input","_instance":"①","comment":"great"},{"type":"input","_instance":"②","comment":"spam"},
				{"type":"input","lang":"en"}]`,
			plan: `[{"_tool":"t","_instance":"①","x":"†input.comment","_outputPath":"†state.verdict"},
				{"_tool":"t","_instance":"②","x":"†input.lang"},
				{"_tool":"t","_instance":"②","x":"†state.verdict"},
				{"_tool":"t","x":"†state.verdict"},
				{"_tool":"t","_instance":"①","x":"†state.verdict"},
				{"_tool":"t","_instance":"③","x":"†input.comment"}]`,
			want: []string{
				"call 2 (t) instance ② param /x ref †state.verdict: unsatisfiable reference: no call writes it and the context has no value there",
				"call 3 (t) param /x ref †state.verdict: unsatisfiable reference: no call writes it and the context has no value there",
				"call 5 (t) instance ③ param /x ref †input.comment: unsatisfiable reference: no call writes it and the context has no value there",
			},
			is: []error{agent.ErrUnsatisfiable},
		},
		{
			name: "scoped calls",
			context: `[` + tools + `,{"type":"tool","tool":{"s":{"type":"object","properties":{"x":{},"_scopes":{"const":["state"]}}}}},
				{"type":"input","q":1},{"type":"state","h":{"last":1},"k":2}]`,
			plan: `[{"_tool":"s","x":"†input.q"},
				{"_tool":"s","x":"†state.h.last"},
				{"_tool":"t","_scopes":["†state.h"],"x":"†state.k"},
				{"_tool":"t","_scopes":["†state.h"],"x":"†state.h.last"},
				{"_tool":"t","_scopes":["input"],"x":"†state.k || †input.q"},
				{"_tool":"t","_scopes":["input"],"x":"†data.out"},
				{"_tool":"t","x":1,"_outputPath":"†data.out"}]`,
			want: []string{
				"call 0 (s) param /x ref †input.q: unsatisfiable reference: outside the call's _scopes (state)",
				"call 2 (t) param /x ref †state.k: unsatisfiable reference: outside the call's _scopes (†state.h)",
				"call 5 (t) param /x ref †data.out: unsatisfiable reference: outside the call's _scopes (input)",
			},
			is: []error{agent.ErrUnsatisfiable},
		},
		{
			// A reference in _scopes is read as a parameter's is: it needs a
			// writer or a value, and reading it is a dependency.
			name: "scope references",
			context: `[` + tools + `,{"type":"tool","tool":{"s":{"type":"object","properties":{"x":{},"_scopes":{"const":["†state.gone"]}}}}},
				{"type":"state","h":{"last":1}}]`,
			plan: `[{"_tool":"t","_scopes":["†state.h.last"],"x":1},
				{"_tool":"t","_scopes":["input","†state.missing"],"x":1},
				{"_tool":"t","_scopes":["†state.made"],"x":1},
				{"_tool":"t","x":1,"_outputPath":"†state.made"},
				{"_tool":"s","x":1},
				{"_tool":"t","_scopes":["†state.b"],"_outputPath":"†state.a"},
				{"_tool":"t","_scopes":["†state.a"],"_outputPath":"†state.b"}]`,
			want: []string{
				"call 1 (t) param /_scopes/1 ref †state.missing: unsatisfiable reference: no call writes it and the context has no value there",
				"call 4 (s) param /_scopes/0 ref †state.gone: unsatisfiable reference: no call writes it and the context has no value there",
				"call 5 (t) param /_scopes/0 ref †state.b: dependency cycle: 5 (t) → 6 (t) → 5 (t)",
			},
			is:    []error{agent.ErrUnsatisfiable, agent.ErrCycle},
			cycle: []int{5, 6, 5},
		},
		{
			name:    "malformed scopes",
			context: `[` + tools + `]`,
			plan:    `[{"_tool":"t","_scopes":"state"},{"_tool":"t","_scopes":["input","no kind"]},{"_tool":"t","_scopes":["†input.a || †input.b"]}]`,
			want: []string{
				"call 0 (t) param /_scopes: invalid call: invalid scope: _scopes must be an array of kinds or references: json: cannot unmarshal string into Go value of type []string",
				`call 1 (t) param /_scopes/1: invalid call: invalid scope "no kind": not a kind or a reference`,
				`call 2 (t) param /_scopes/0: invalid call: invalid scope "†input.a || †input.b": a scope names one reference`,
			},
			is: []error{agent.ErrInvalidCall, agent.ErrScope},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("reg", json.RawMessage(`{"type":"object","properties":{"y":{"type":"number"}}}`))
			err := agent.ValidatePlan(context.Background(), agent.Config{Registry: reg}, planOf(t, tt.plan), planCtx(t, tt.context))
			var got []string
			if pe, ok := errors.AsType[*agent.PlanError](err); ok {
				for _, p := range pe.Problems {
					got = append(got, p.Error())
				}
			} else if err != nil {
				t.Fatalf("not a *PlanError: %v", err)
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("problems (-got +want):\n%s", d)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) is false", target)
				}
			}
			if tt.cycle != nil {
				ce, ok := errors.AsType[*agent.CycleError](err)
				if !ok {
					t.Fatalf("no *CycleError in %v", err)
				}
				if d := cmp.Diff(ce.Calls, tt.cycle); d != "" {
					t.Errorf("cycle (-got +want):\n%s", d)
				}
			}
		})
	}
}

func TestValidatePlanSpecExamples(t *testing.T) {
	for _, name := range []string{"refund.json", "hotel.json", "payment.json", "payment_replan.json", "language.json"} {
		t.Run(name, func(t *testing.T) {
			plan, msgs := loadPlan(t, name)
			// Validation needs no activities: the tools come from the context.
			if err := agent.ValidatePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, plan, msgs); err != nil {
				t.Error(err)
			}
			if err := agent.CheckPlan(plan); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestValidatePlanProblemFields(t *testing.T) {
	err := agent.ValidatePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()},
		planOf(t, `[{"_tool":"t","_instance":"①","a":{"b":"†state.x"}}]`),
		planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object"}}}]`))
	pe, ok := errors.AsType[*agent.PlanError](err)
	if !ok {
		t.Fatalf("got %v", err)
	}
	want := []agent.PlanProblem{{Call: 0, Tool: "t", Instance: "①", Param: "/a/b", Ref: "†state.x", Err: pe.Problems[0].Err}}
	if d := cmp.Diff(pe.Problems, want, cmp.Comparer(func(a, b error) bool { return a == b })); d != "" {
		t.Errorf("(-got +want):\n%s", d)
	}
	if p, ok := errors.AsType[agent.PlanProblem](err); !ok || p.Ref != "†state.x" {
		t.Errorf("errors.AsType[PlanProblem] = %v, %v", p, ok)
	}
}

func TestValidatePlanBadContext(t *testing.T) {
	err := agent.ValidatePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, nil,
		planCtx(t, `[{"type":"tool","tool":"nowhere"}]`))
	if _, ok := errors.AsType[*agent.MessageError](err); !ok || !errors.Is(err, agent.ErrUnknownTool) {
		t.Errorf("got %v, want a *MessageError about the unknown tool", err)
	}
	if _, ok := errors.AsType[*agent.PlanError](err); ok {
		t.Error("a broken context is not a plan problem")
	}
}

func TestCheckPlan(t *testing.T) {
	// Without a context only the plan's own structure is checked: unknown
	// tools and unsatisfiable references pass.
	if err := agent.CheckPlan(planOf(t, `[{"_tool":"anything","x":"†input.whatever"}]`)); err != nil {
		t.Error(err)
	}
	err := agent.CheckPlan(planOf(t, `[{"_tool":"a","x":"†state.a","_outputPath":"†state.a"},{"_tool":"b","_outputPath":"†x y"}]`))
	want := `agent: invalid plan: call 0 (a) param /x ref †state.a: dependency cycle: 0 (a) → 0 (a); ` +
		`call 1 (b) param /_outputPath: ref "†x y" at offset 5: syntax error: expected && or || but found "y"`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestExecutePlanParallel(t *testing.T) {
	// a and b are independent: each waits until the other has started, so
	// they must run at the same time. c reads both: it must wait for both.
	reg, rec := agent.NewRegistry(), &ran{}
	startedA, startedB := make(chan struct{}), make(chan struct{})
	var doneA, doneB atomic.Bool
	meet := func(mine, other chan struct{}, done *atomic.Bool, v string) func(*agent.Call) (*agent.Result, error) {
		return func(*agent.Call) (*agent.Result, error) {
			close(mine)
			select {
			case <-other:
			case <-time.After(5 * time.Second):
				return nil, errors.New("the other call did not run alongside")
			}
			done.Store(true)
			return &agent.Result{Value: json.RawMessage(v)}, nil
		}
	}
	do(reg, rec, "a", meet(startedA, startedB, &doneA, `1`))
	do(reg, rec, "b", meet(startedB, startedA, &doneB, `2`))
	do(reg, rec, "c", func(c *agent.Call) (*agent.Result, error) {
		if !doneA.Load() || !doneB.Load() {
			return nil, errors.New("c ran before its inputs")
		}
		return &agent.Result{Value: c.Args()}, nil
	})
	ctxMsgs := planCtx(t, `[{"type":"tool","tool":{"a":{"type":"object"},"b":{"type":"object"},"c":{"type":"object"}}}]`)
	plan := planOf(t, `[{"_tool":"c","sum":["†state.a","†state.b"],"_outputPath":"†state.c"},
		{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","_outputPath":"†state.b"}]`)
	var order []string
	var res *agent.RunResult
	for ev, err := range agent.PlanEvents(context.Background(), agent.Config{Registry: reg, Concurrency: 2}, plan, ctxMsgs) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case agent.EventCallStarted, agent.EventCallFinished, agent.EventCallFailed:
			order = append(order, string(ev.Kind)+" "+ev.Call.Tool)
		case agent.EventDone:
			res = ev.Result
		}
	}
	if errs := planErrors(res.Log); errs != nil {
		t.Fatalf("errors: %q", errs)
	}
	if got := stateOf(t, res.Log); got != `{"a":1,"b":2,"c":{"sum":[1,2]}}` {
		t.Errorf("state %s", got)
	}
	pos := func(s string) int { return slices.Index(order, s) }
	if pos("call.started c") < pos("call.finished a") || pos("call.started c") < pos("call.finished b") ||
		pos("call.started a") < 0 || pos("call.started b") > pos("call.finished a") {
		t.Errorf("order %q", order)
	}
}

func TestExecutePlanConcurrencyBound(t *testing.T) {
	// Four independent calls with a bound of two: they meet in pairs, and
	// never more than two run at once.
	reg, rec := agent.NewRegistry(), &ran{}
	var running, most atomic.Int32
	pair := make(chan struct{})
	do(reg, rec, "w", func(*agent.Call) (*agent.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case pair <- struct{}{}:
		case <-pair:
		case <-time.After(5 * time.Second):
			return nil, errors.New("no partner")
		}
		return nil, nil
	})
	plan := planOf(t, `[{"_tool":"w","_outputPath":"†state.a"},{"_tool":"w","_outputPath":"†state.b"},
		{"_tool":"w","_outputPath":"†state.c"},{"_tool":"w","_outputPath":"†state.d"}]`)
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Concurrency: 2}, plan,
		planCtx(t, `[{"type":"tool","tool":{"w":{"type":"object"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); errs != nil {
		t.Errorf("errors: %q", errs)
	}
	if most.Load() != 2 {
		t.Errorf("at most %d calls ran at once, want 2", most.Load())
	}
	if got := stateOf(t, res.Log); got != `{"a":null,"b":null,"c":null,"d":null}` {
		t.Errorf("state %s", got)
	}
}

func TestExecutePlanSequentialLog(t *testing.T) {
	// With a bound of one, ready calls start in plan order and the log is
	// the same at every run.
	plan, msgs := loadPlan(t, "refund.json")
	var logs []string
	for range 3 {
		reg, _ := specRegistry(false)
		res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Concurrency: 1, Clock: fixedClock}, plan, msgs)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, m := range res.Log.Messages()[len(msgs):] {
			j, _ := m.MarshalJSON()
			b.Write(j)
			b.WriteByte('\n')
		}
		logs = append(logs, b.String())
	}
	want := `{"type":"data","kind":"state","data":{"billingHistory":{"orders":5,"lastChargeback":"2025-09-10"}},"_call":{"_tool":"checkBillingHistory","customerId":"†input.customerId","_outputPath":"†state.billingHistory"},"_date":"2025-10-26T12:00:00Z","_outputMethod":"set","_outputPath":"†state.billingHistory"}
{"type":"data","kind":"state","data":{"refund":{"confirmationId":"refund_xyz789"}},"_call":{"_tool":"issueRefund","customerId":"†input.customerId","amount":"†input.amount","_outputPath":"†state.refund"},"_date":"2025-10-26T12:00:00Z","_outputMethod":"set","_outputPath":"†state.refund"}
{"type":"plan","plan":[{"_tool":"checkBillingHistory","customerId":"†input.customerId","_outputPath":"†state.billingHistory"},{"_tool":"issueRefund","customerId":"†input.customerId","amount":"†input.amount","_outputPath":"†state.refund"}]}
`
	for i, got := range logs {
		if d := cmp.Diff(got, want); d != "" {
			t.Errorf("run %d (-got +want):\n%s", i, d)
		}
	}
}

func TestExecutePlanFailures(t *testing.T) {
	const tools = `{"type":"tool","tool":{"ok":{"type":"object"},"boom":{"type":"object"},"fail":{"type":"object"},
		"num":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]},"echo":{"type":"object"}}}`
	for _, tt := range []struct {
		name      string
		plan      string
		confirm   func(c *agent.Call) (agent.Decision, error)
		wantCalls []string
		wantState string
		wantErrs  []string
	}{
		{
			name:      "a panic is a runtime error; its reader never runs",
			plan:      `[{"_tool":"boom","_outputPath":"†state.a"},{"_tool":"echo","a":"†state.a","_outputPath":"†state.b"}]`,
			wantCalls: []string{"boom {}"},
			wantErrs: []string{"runtime error in boom: panic: kaput",
				`structural error in echo: never became ready: param /a: ref "†state.a": not found: unknown kind "state"`},
		},
		{
			name:      "parameters that fail once resolved",
			plan:      `[{"_tool":"num","n":"†input.name","_outputPath":"†state.n"},{"_tool":"ok","_outputPath":"†state.ok"}]`,
			wantCalls: []string{"ok {}"},
			wantState: `{"ok":"fine"}`,
			wantErrs:  []string{"structural error in num: params: at /n: expected number, got string"},
		},
		{
			name: "a fallback runs once its first choice never can",
			plan: `[{"_tool":"fail","_outputPath":"†state.a"},{"_tool":"echo","a":"†state.a","_outputPath":"†state.b"},
				{"_tool":"echo","v":"†state.b || †input.name","_outputPath":"†state.c"}]`,
			wantCalls: []string{"echo {\"v\":\"Bob\"}", "fail {}"},
			wantState: `{"c":{"v":"Bob"}}`,
			wantErrs: []string{"runtime error in fail: no luck",
				`structural error in echo: never became ready: param /a: ref "†state.a": not found: unknown kind "state"`},
		},
		{
			name: "rejected by confirm",
			plan: `[{"_tool":"ok","_outputPath":"†state.a"},{"_tool":"echo","x":1,"_outputPath":"†state.b"}]`,
			confirm: func(c *agent.Call) (agent.Decision, error) {
				if c.Tool == "echo" {
					return agent.Decision{Reject: "not now"}, nil
				}
				return agent.Decision{}, nil
			},
			wantCalls: []string{"ok {}"},
			wantState: `{"a":"fine"}`,
			wantErrs:  []string{"rejected error in echo: not now"},
		},
		{
			name: "replaced by confirm",
			plan: `[{"_tool":"echo","x":1,"_outputPath":"†state.b"}]`,
			confirm: func(c *agent.Call) (agent.Decision, error) {
				return agent.Decision{Replace: json.RawMessage(`{"_tool":"echo","x":2,"_outputPath":"†state.b"}`)}, nil
			},
			wantCalls: []string{`echo {"x":2}`},
			wantState: `{"b":{"x":2}}`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, rec := agent.NewRegistry(), &ran{}
			do(reg, rec, "ok", answer(`"fine"`))
			do(reg, rec, "boom", func(*agent.Call) (*agent.Result, error) { panic("kaput") })
			do(reg, rec, "fail", func(*agent.Call) (*agent.Result, error) { return nil, errors.New("no luck") })
			do(reg, rec, "num", answer(`1`))
			do(reg, rec, "echo", func(c *agent.Call) (*agent.Result, error) { return &agent.Result{Value: c.Args()}, nil })
			cfg := agent.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)}
			if tt.confirm != nil {
				cfg.Confirm = func(_ context.Context, c *agent.Call) (agent.Decision, error) { return tt.confirm(c) }
			}
			res, err := agent.ExecutePlan(context.Background(), cfg, planOf(t, tt.plan),
				planCtx(t, `[`+tools+`,{"type":"input","name":"Bob"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(rec.sorted(), tt.wantCalls); d != "" {
				t.Errorf("activity calls (-got +want):\n%s", d)
			}
			if got := stateOf(t, res.Log); got != tt.wantState {
				t.Errorf("state %s, want %s", got, tt.wantState)
			}
			if d := cmp.Diff(planErrors(res.Log), tt.wantErrs); d != "" {
				t.Errorf("error messages (-got +want):\n%s", d)
			}
		})
	}
}

func TestExecutePlanEventsOfFailures(t *testing.T) {
	plan, msgs := loadPlan(t, "payment.json")
	reg, _ := specRegistry(true)
	var failed []error
	for ev, err := range agent.PlanEvents(context.Background(), agent.Config{Registry: reg}, plan, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventCallFailed {
			failed = append(failed, ev.Err)
		}
	}
	if len(failed) != 2 || !errors.Is(failed[1], agent.ErrNeverReady) || errors.Is(failed[0], agent.ErrNeverReady) {
		t.Errorf("failures %v", failed)
	}
	if ce, ok := errors.AsType[*agent.CallError](failed[1]); !ok || ce.Kind != agent.Structural {
		t.Errorf("never ready is not a structural call error: %v", failed[1])
	}
}

func TestExecutePlanEmpty(t *testing.T) {
	msgs := planCtx(t, `[{"type":"input","x":1}]`)
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Log.Len() != 1 {
		t.Errorf("an empty plan appended %d messages", res.Log.Len()-1)
	}
}

func TestExecutePlanDoesNotRepeatThePlan(t *testing.T) {
	// Running the plan the context already ends with: no second plan message.
	data, err := os.ReadFile(filepath.Join("testdata", "plan", "hotel_idea.json"))
	if err != nil {
		t.Fatal(err)
	}
	idea, err := agent.ParseIdea(data)
	if err != nil {
		t.Fatal(err)
	}
	plan, _, _ := agent.LastPlan(idea.Context)
	reg, rec := specRegistry(false)
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, idea.Context)
	if err != nil {
		t.Fatal(err)
	}
	if res.Log.Len() != len(idea.Context) {
		t.Errorf("%d messages appended: %v", res.Log.Len()-len(idea.Context), res.Log.Messages()[len(idea.Context):])
	}
	if d := cmp.Diff(rec.sorted(), []string{`bookFlight {"destination":"Berlin"}`, `bookHotel {"destination":"Berlin"}`}); d != "" {
		t.Errorf("activity calls (-got +want):\n%s", d)
	}
}

func TestExecutePlanUnregisteredActivity(t *testing.T) {
	msgs := planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object","_activity":"nowhere"}}}]`)
	_, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, planOf(t, `[{"_tool":"t"}]`), msgs)
	want := `agent: invalid plan: call 0 (t): tool "t" names activity "nowhere", which is not registered`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestExecutePlanConfirmError(t *testing.T) {
	plan, msgs := loadPlan(t, "refund.json")
	reg, rec := specRegistry(false)
	hitl := errors.New("the reviewer left")
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Confirm: func(context.Context, *agent.Call) (agent.Decision, error) {
		return agent.Decision{}, hitl
	}}, plan, msgs)
	if _, ok := errors.AsType[*agent.LimitError](err); !ok || !errors.Is(err, hitl) {
		t.Fatalf("got %v", err)
	}
	if res == nil || res.Log.Len() != len(msgs) || len(rec.sorted()) != 0 {
		t.Errorf("something ran: %+v %q", res, rec.sorted())
	}
}

func TestExecutePlanLatent(t *testing.T) {
	const tools = `[{"type":"tool","tool":{"summarize":{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}},
		"store":{"type":"object"}}},{"type":"input","text":"A long text."}]`
	t.Run("without a provider nothing runs", func(t *testing.T) {
		reg, rec := agent.NewRegistry(), &ran{}
		do(reg, rec, "store", answer(`true`))
		plan := planOf(t, `[{"_tool":"store","_outputPath":"†state.stored"},{"_tool":"summarize","text":"†input.text","_outputPath":"†state.summary"}]`)
		res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, planCtx(t, tools))
		want := "agent: invalid plan: call 1 (summarize): no provider: the tool has no activity and the call no _output, so the model must produce its result"
		if err == nil || err.Error() != want || !errors.Is(err, agent.ErrNoProvider) {
			t.Errorf("got  %v\nwant %s", err, want)
		}
		if res != nil || rec.sorted() != nil {
			t.Errorf("something ran: %+v %q", res, rec.sorted())
		}
		// Validation alone does not need a provider.
		if err := agent.ValidatePlan(context.Background(), agent.Config{Registry: reg}, plan, planCtx(t, tools)); err != nil {
			t.Error(err)
		}
	})
	// A delegate's sub-run asks the model, an inline _output or not:
	// without a provider the plan does not start, and says why.
	t.Run("a delegate needs a provider", func(t *testing.T) {
		const delegate = `[{"type":"tool","tool":{"stylist":{"type":"object","description":"Pick an outfit.",
			"properties":{"sky":{"type":"string"},"_output":{"type":"string"}},"_delegate":"anonymous"}}}]`
		for _, plan := range []string{`[{"_tool":"stylist","sky":"snow"}]`, `[{"_tool":"stylist","sky":"snow","_output":"A parka."}]`} {
			_, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, planOf(t, plan), planCtx(t, delegate))
			want := "agent: invalid plan: call 0 (stylist): no provider: the tool is a delegate, whose sub-run asks the model"
			if err == nil || err.Error() != want || !errors.Is(err, agent.ErrNoProvider) {
				t.Errorf("%s:\ngot  %v\nwant %s", plan, err, want)
			}
		}
	})
	t.Run("an inline _output needs no provider", func(t *testing.T) {
		plan := planOf(t, `[{"_tool":"summarize","text":"†input.text","_output":"Short.","_outputPath":"†state.summary"}]`)
		res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, plan, planCtx(t, tools))
		if err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, res.Log); got != `{"summary":"Short."}` {
			t.Errorf("state %s", got)
		}
	})
	t.Run("the provider produces the result", func(t *testing.T) {
		p := scripted.New(scripted.Response{Solutions: []string{`{"output":"Short."}`}, Usage: provider.Usage{Input: 7, Output: 3}})
		plan := planOf(t, `[{"_tool":"summarize","text":"†input.text","_outputPath":"†state.summary"}]`)
		res, err := agent.ExecutePlan(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, plan, planCtx(t, tools))
		if err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, res.Log); got != `{"summary":"Short."}` {
			t.Errorf("state %s", got)
		}
		if res.Usage.Total() != 10 || len(p.Requests()) != 1 {
			t.Errorf("usage %+v, requests %d", res.Usage, len(p.Requests()))
		}
	})
}

func TestExecutePlanInvalid(t *testing.T) {
	reg, rec := specRegistry(false)
	plan, msgs := loadPlan(t, "refund.json")
	plan = append(plan, json.RawMessage(`{"_tool":"issueRefund","customerId":"†state.nobody","amount":1}`))
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, msgs)
	if !errors.Is(err, agent.ErrUnsatisfiable) || res != nil || rec.sorted() != nil {
		t.Errorf("got %v, %+v, ran %q", err, res, rec.sorted())
	}
}

func TestExecutePlanCancel(t *testing.T) {
	reg, rec := agent.NewRegistry(), &ran{}
	started := make(chan struct{})
	var stopped atomic.Bool
	do(reg, rec, "first", answer(`1`))
	do(reg, rec, "wait", func(*agent.Call) (*agent.Result, error) { return nil, nil })
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		close(started)
		<-ctx.Done()
		stopped.Store(true)
		return nil, ctx.Err()
	}))
	plan := planOf(t, `[{"_tool":"first","_outputPath":"†state.a"},{"_tool":"slow","a":"†state.a","_outputPath":"†state.b"},
		{"_tool":"wait","b":"†state.b","_outputPath":"†state.c"}]`)
	msgs := planCtx(t, `[{"type":"tool","tool":{"first":{"type":"object"},"slow":{"type":"object"},"wait":{"type":"object"}}}]`)

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-started
			cancel()
		}()
		res, err := agent.ExecutePlan(ctx, agent.Config{Registry: reg}, plan, msgs)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if _, ok := errors.AsType[*agent.LimitError](err); !ok {
			t.Errorf("not a *LimitError: %v", err)
		}
		if got := stateOf(t, res.Log); got != `{"a":1}` {
			t.Errorf("state %s: the output of the finished call is lost", got)
		}
		if !stopped.Load() || slices.Contains(rec.sorted(), "wait {}") {
			t.Errorf("stopped %v, ran %q", stopped.Load(), rec.sorted())
		}
		// As a loop's cut step, the cut plan leaves out its plan message
		// and its calls' errors: the call did not fail, the run stopped.
		if errs, plans := planErrors(res.Log), plansOf(res.Log); len(errs) != 0 || len(plans) != 0 {
			t.Errorf("errors %q, plans %q", errs, plans)
		}
	})
	t.Run("break", func(t *testing.T) {
		started = make(chan struct{})
		stopped.Store(false)
		// slow and first are independent: slow is started first, and
		// runs while first's events arrive.
		plan := planOf(t, `[{"_tool":"slow","_outputPath":"†state.b"},{"_tool":"first","_outputPath":"†state.a"}]`)
		for ev, err := range agent.PlanEvents(context.Background(), agent.Config{Registry: reg}, plan, msgs) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind == agent.EventCallStarted && ev.Call.Tool == "first" {
				<-started
				break
			}
		}
		if !stopped.Load() {
			t.Error("breaking out of PlanEvents did not stop and wait for the running call")
		}
	})
}

func TestExecutePlanInstances(t *testing.T) {
	// Page 013's moderation batch: one template, three instances, a global
	// setting. Each instance reads and writes only its own data.
	reg, rec := agent.NewRegistry(), &ran{}
	var running, most atomic.Int32
	do(reg, rec, "moderate", func(c *agent.Call) (*agent.Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		var p struct{ Comment, Strictness string }
		if err := json.Unmarshal(c.Args(), &p); err != nil {
			return nil, err
		}
		verdict := "approve"
		if strings.Contains(p.Comment, "spam") {
			verdict = "reject"
		}
		return agent.Value(map[string]string{"verdict": verdict, "by": c.Instance, "strictness": p.Strictness})
	})
	do(reg, rec, "record", func(c *agent.Call) (*agent.Result, error) { return &agent.Result{Value: c.Args()}, nil })
	msgs := planCtx(t, `[{"type":"tool","tool":{"moderate":{"type":"object","properties":{"comment":{"type":"string"},"strictness":{"type":"string"}}},
			"record":{"type":"object"}}},
		{"type":"input","strictness":"high"},
		{"type":"input","_instance":"①","comment":"This is a great post!"},
		{"type":"input","_instance":"②","comment":"I disagree with this..."},
		{"type":"input","_instance":"③","comment":"This is spam."}]`)
	plan := planOf(t, `[{"_tool":"record","verdict":"†state.moderation.verdict","_outputPath":"†state.recorded"},
		{"_tool":"moderate","comment":"†input.comment","strictness":"†input.strictness","_outputPath":"†state.moderation"}]`)
	res, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg, Concurrency: 2}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if errs := planErrors(res.Log); errs != nil {
		t.Fatalf("errors %q", errs)
	}
	for _, tt := range []struct{ id, want string }{
		{"①", `{"moderation":{"by":"①","strictness":"high","verdict":"approve"},"recorded":{"verdict":"approve"}}`},
		{"②", `{"moderation":{"by":"②","strictness":"high","verdict":"approve"},"recorded":{"verdict":"approve"}}`},
		{"③", `{"moderation":{"by":"③","strictness":"high","verdict":"reject"},"recorded":{"verdict":"reject"}}`},
	} {
		if got := stateOf(t, res.Log.Instance(tt.id)); got != tt.want {
			t.Errorf("state of %s: %s, want %s", tt.id, got, tt.want)
		}
	}
	if got := stateOf(t, res.Log); got != "" {
		t.Errorf("global state was written: %s", got)
	}
	if n := len(rec.sorted()); n != 6 {
		t.Errorf("%d calls ran, want 6", n)
	}
	if most.Load() > 2 {
		t.Errorf("%d calls ran at once, want at most 2", most.Load())
	}
	// The plan appended is the template, not its copies.
	last, _, _ := agent.LastPlan(res.Log.Messages())
	if d := cmp.Diff(last, plan, cmp.Transformer("string", func(r json.RawMessage) string { return string(r) })); d != "" {
		t.Errorf("plan message (-got +want):\n%s", d)
	}
}

func TestExecutePlanInstancesErrors(t *testing.T) {
	msgs := planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object"},"strict":{"type":"object","properties":{"v":{"type":"integer"}},"additionalProperties":false}}},
		{"type":"state","_instance":"a","x":1},{"type":"state","_instance":"b","y":1}]`)
	many := planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object"}}},{"type":"state","_instance":"1"},{"type":"state","_instance":"2"},
		{"type":"state","_instance":"3"},{"type":"state","_instance":"4"},{"type":"state","_instance":"5"},{"type":"state","_instance":"6"},{"type":"state","_instance":"7"}]`)
	cfg := agent.Config{Registry: agent.NewRegistry()}
	cfg.Registry.Activity("t", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return nil, nil }))
	cfg.Registry.Activity("strict", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return nil, nil }))
	for _, tt := range []struct {
		name    string
		plan    string
		context []message.Message
		want    string
		is      error
	}{
		{"no instances", `[{"_tool":"t"}]`, planCtx(t, `[{"type":"state","x":1}]`), "agent: no instances in the context", agent.ErrNoInstances},
		{"a template call with an instance", `[{"_tool":"t"},{"_tool":"t","_instance":"a"}]`, msgs,
			"agent: invalid plan: call 1 (t) instance a: invalid call: a call of a template plan must not have an _instance", agent.ErrInvalidCall},
		{"a malformed template call is reported once", `[{"_tool":"t"},{"x":1}]`, msgs,
			"agent: invalid plan: call 1: invalid call: the call has no _tool", agent.ErrInvalidCall},
		{"a cycle names template calls", `[{"_tool":"t"},{"_tool":"t","v":"†state.q","_outputPath":"†state.q.r"}]`, msgs,
			"agent: invalid plan: call 1 (t) instances a, b param /v ref †state.q: dependency cycle: 1 (t) → 1 (t)", agent.ErrCycle},
		{"problems name the template call and the instance", `[{"_tool":"t","v":"†state.x"}]`, msgs,
			"agent: invalid plan: call 0 (t) instance b param /v ref †state.x: unsatisfiable reference: no call writes it and the context has no value there", agent.ErrUnsatisfiable},
		{"an instance without a value", `[{"_tool":"t","v":"†state.y"},{"_tool":"t","w":"†state.z","_outputPath":"†state.y"}]`, msgs,
			"agent: invalid plan: call 1 (t) instances a, b param /w ref †state.z: unsatisfiable reference: no call writes it and the context has no value there", agent.ErrUnsatisfiable},
		// A closed tool admits the meta-properties a call may carry
		// (_instance among them), and still checks its own parameters.
		{"literal parameters are checked with the _instance", `[{"_tool":"strict","v":1,"w":2}]`, msgs,
			`agent: invalid plan: call 0 (strict) instances a, b: invalid call: at (root): property "w" is not allowed`, agent.ErrInvalidCall},
		{"an unknown tool", `[{"_tool":"t"},{"_tool":"u"}]`, msgs,
			`agent: invalid plan: call 1 (u) instances a, b: unknown tool "u" (tools: t, strict)`, agent.ErrUnknownTool},
		// The same problem in many instances is said once, naming five.
		{"many instances", `[{"_tool":"u"}]`, many,
			`agent: invalid plan: call 0 (u) instances 1, 2, 3, 4, 5 and 2 more: unknown tool "u" (tools: t)`, agent.ErrUnknownTool},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := agent.ExecutePlanInstances(context.Background(), cfg, planOf(t, tt.plan), tt.context)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.is) {
				t.Errorf("got  %v\nwant %s", err, tt.want)
			}
			if res != nil {
				t.Errorf("result %+v", res)
			}
			// Validation alone finds what the run finds first.
			err = agent.ValidatePlanInstances(context.Background(), cfg, planOf(t, tt.plan), tt.context)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.is) {
				t.Errorf("ValidatePlanInstances: got  %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestValidatePlanInstances: a template plan that reads instanced data
// is valid per instance, while ValidatePlan, which sees no instance,
// finds nothing there; an instance that lacks the data is named.
func TestValidatePlanInstances(t *testing.T) {
	cfg := agent.Config{Registry: agent.NewRegistry()}
	plan := planOf(t, `[{"_tool":"t","v":"†input.n","_outputPath":"†state.d"},{"_tool":"t","v":"†state.d"}]`)
	full := planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object"}}},{"type":"input","_instance":"1","n":1},{"type":"input","_instance":"2","n":2}]`)
	if err := agent.ValidatePlanInstances(context.Background(), cfg, plan, full); err != nil {
		t.Errorf("instances with their inputs: %v", err)
	}
	if err := agent.ValidatePlan(context.Background(), cfg, plan, full); !errors.Is(err, agent.ErrUnsatisfiable) {
		t.Errorf("ValidatePlan of the template: %v, want it unsatisfiable with no instance", err)
	}
	lacking := planCtx(t, `[{"type":"tool","tool":{"t":{"type":"object"}}},{"type":"input","_instance":"1","n":1},{"type":"state","_instance":"2","m":2}]`)
	want := "agent: invalid plan: call 0 (t) instance 2 param /v ref †input.n: unsatisfiable reference: no call writes it and the context has no value there"
	if err := agent.ValidatePlanInstances(context.Background(), cfg, plan, lacking); err == nil || err.Error() != want {
		t.Errorf("an instance without its input:\ngot  %v\nwant %s", err, want)
	}
}

// TestExecutePlanInstancesExpanded checks that running a template per
// instance logs what running its expansion does, but for the plan
// message, which is the template.
func TestExecutePlanInstancesExpanded(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Activity("double", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct{ V int }
		if err := json.Unmarshal(c.Args(), &p); err != nil {
			return nil, err
		}
		if p.V < 0 {
			return nil, errors.New("negative")
		}
		return agent.Value(map[string]any{"v": 2 * p.V, "by": c.Instance})
	}))
	tools := `{"type":"tool","tool":{"double":{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}}}`
	for _, tt := range []struct {
		name, plan, context string
	}{
		{"chain", `[{"_tool":"double","v":"†input.v","_outputPath":"†state.a"},
			{"_tool":"double","v":"†state.a.v","_outputPath":"†state.b"},
			{"_tool":"double", "v": "†state.b.v", "_outputPath":"†state.c"}]`,
			`[` + tools + `,{"type":"input","_instance":"x","v":1},{"type":"input","_instance":"y","v":2},{"type":"input","_instance":"z","v":3}]`},
		{"global fallback and failures", `[{"_tool":"double","v":"†input.v","_outputPath":"†state.ok || †state.failed"},
			{"_tool":"double","v":"†state.ok.v || †input.w","_outputPath":"†state.next","_outputMethod":"push"},
			{"_tool":"double","v":7}]`,
			`[` + tools + `,{"type":"input","w":5},{"type":"input","_instance":"x","v":-1},{"type":"input","_instance":"y","v":4}]`},
		{"never ready", `[{"_tool":"double","v":"†state.failed.v"},{"_tool":"double","v":"†input.v","_outputPath":"†state.ok || †state.failed"}]`,
			`[` + tools + `,{"type":"input","_instance":"x","v":1},{"type":"input","_instance":"y","v":-1}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := agent.Config{Registry: reg, Concurrency: 1, Clock: fixedClock}
			plan, msgs := planOf(t, tt.plan), planCtx(t, tt.context)
			got, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
			if err != nil {
				t.Fatal(err)
			}
			calls, err := agent.InstancePlan(plan, agent.InstanceIDs(msgs))
			if err != nil {
				t.Fatal(err)
			}
			want, err := agent.ExecutePlan(context.Background(), cfg, calls, msgs)
			if err != nil {
				t.Fatal(err)
			}
			var gotS, wantS []string
			for _, m := range got.Log.Messages() {
				if m.Type != message.TypePlan {
					b, _ := json.Marshal(m)
					gotS = append(gotS, string(b))
				}
			}
			for _, m := range want.Log.Messages() {
				if m.Type != message.TypePlan {
					b, _ := json.Marshal(m)
					wantS = append(wantS, string(b))
				}
			}
			if len(gotS) <= len(msgs) {
				t.Errorf("nothing was appended")
			}
			if d := cmp.Diff(gotS, wantS); d != "" {
				t.Errorf("(-got +want):\n%s", d)
			}
		})
	}
}

// TestExecutePlanInstancesOrder checks that one call at a time runs the
// calls in plan order among those ready: each instance's chain runs
// before the next instance starts.
func TestExecutePlanInstancesOrder(t *testing.T) {
	reg := agent.NewRegistry()
	for _, name := range []string{"a", "b"} {
		reg.Tool(name, json.RawMessage(`{"type":"object"}`))
		reg.Activity(name, agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`{}`)}, nil
		}))
	}
	var msgs []message.Message
	var want []string
	for i := range 50 {
		id := strconv.Itoa(i)
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: "input", Instance: id, Data: json.RawMessage(`{}`)})
		want = append(want, id+" †state.a", id+" †state.b")
	}
	plan := planOf(t, `[{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","x":"†state.a","_outputPath":"†state.b"}]`)
	res, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg, Concurrency: 1}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Log.Messages() {
		if m.OutputPath != "" {
			got = append(got, m.Instance+" "+m.OutputPath)
		}
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("(-got +want):\n%s", d)
	}
}

func TestInstancePlan(t *testing.T) {
	got, err := agent.InstancePlan(planOf(t, `[{"_tool":"a","x":"†input.x"},{"_tool":"b"}]`), []string{"①", "②"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"_tool":"a","x":"†input.x","_instance":"①"}`, `{"_tool":"b","_instance":"①"}`,
		`{"_tool":"a","x":"†input.x","_instance":"②"}`, `{"_tool":"b","_instance":"②"}`}
	var gotS []string
	for _, g := range got {
		gotS = append(gotS, string(g))
	}
	if d := cmp.Diff(gotS, want); d != "" {
		t.Errorf("(-got +want):\n%s", d)
	}
	// A null _instance is none, as a strict model writes it and as
	// ExecutePlan reads it: the copy has the instance in its place.
	got, err = agent.InstancePlan(planOf(t, `[{"_tool":"a","_instance":null,"x":1}]`), []string{"①"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0]) != `{"_tool":"a","x":1,"_instance":"①"}` {
		t.Errorf("a template call with a null _instance became %s", got)
	}
	if ids := agent.InstanceIDs(planCtx(t, `[{"type":"input","x":1},{"type":"state","_instance":"②"},{"type":"input","_instance":"①"},{"type":"state","_instance":"②","x":2}]`)); !slices.Equal(ids, []string{"②", "①"}) {
		t.Errorf("InstanceIDs = %q", ids)
	}
}

func TestPlanGraph(t *testing.T) {
	for _, tt := range []struct {
		name string
		plan func(t *testing.T) []json.RawMessage
	}{
		{"profile", func(t *testing.T) []json.RawMessage {
			data, err := os.ReadFile(filepath.Join("testdata", "plan", "profile.json"))
			if err != nil {
				t.Fatal(err)
			}
			return planOf(t, string(data))
		}},
		{"refund", func(t *testing.T) []json.RawMessage { p, _ := loadPlan(t, "refund.json"); return p }},
		{"payment", func(t *testing.T) []json.RawMessage { p, _ := loadPlan(t, "payment.json"); return p }},
		{"language", func(t *testing.T) []json.RawMessage { p, _ := loadPlan(t, "language.json"); return p }},
		{"branches", func(t *testing.T) []json.RawMessage {
			// The weather example of page 012: two branches joining again,
			// a fan-out, a gate, and an instanced call.
			return planOf(t, `[
				{"_tool":"getWeather","city":"†input.city","_outputPath":"†state.sunny || †state.notSunny"},
				{"_tool":"findPark","weather":"†state.sunny","_outputPath":"†state.suggestion && †data.audit.park"},
				{"_tool":"findMovie","weather":"†state.notSunny","_outputPath":"†state.suggestion"},
				{"_tool":"present","what":"†state.suggestion","who":"†input.user && †input.user.name","_instance":"①"},
				{"_tool":"say \"hi\" | bye","x":"†data.audit"}]`)
		}},
		{"cycle", func(t *testing.T) []json.RawMessage {
			return planOf(t, `[{"_tool":"a","x":"†state.b","_outputPath":"†state.a"},{"_tool":"b","x":"†state.a","_outputPath":"†state.b"}]`)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agent.PlanGraph(tt.plan(t))
			if err != nil {
				t.Fatal(err)
			}
			planGolden(t, tt.name+".mmd", got)
		})
	}
	if _, err := agent.PlanGraph(planOf(t, `[{"x":1}]`)); !errors.Is(err, agent.ErrInvalidCall) {
		t.Errorf("malformed plan: %v", err)
	}
}

func TestPlanLazy(t *testing.T) {
	reg, rec := specRegistry(false)
	plan, msgs := loadPlan(t, "language.json")
	calls, _ := json.Marshal(plan)
	p := scripted.Solutions(`{"calls":` + string(calls) + `,"output":null}`)
	cfg := agent.Config{Provider: p, Registry: reg, N: 3}
	sol, got, err := agent.Plan(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || sol.Done() || rec.sorted() != nil {
		t.Fatalf("calls %s, done %v, ran %q", got, sol.Done(), rec.sorted())
	}
	sent := p.Requests()[0]
	if last := sent.Messages[len(sent.Messages)-1]; last.Role != provider.RoleUser || !strings.Contains(last.Text, "Lazy mode") || sent.N != 1 {
		t.Errorf("the request did not ask for a plan only: %+v (n %d)", last, sent.N)
	}
	// Approved: now it runs.
	res, err := agent.ExecutePlan(context.Background(), cfg, got, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"isEnglish":false,"language":"French","translatedText":"Hello world"}` {
		t.Errorf("state %s", got)
	}

	t.Run("invalid plan", func(t *testing.T) {
		p := scripted.Solutions(`{"calls":[{"_tool":"isEnglish","language":"†state.language"}],"output":null}`)
		sol, got, err := agent.Plan(context.Background(), agent.Config{Provider: p, Registry: reg}, nil, msgs)
		if !errors.Is(err, agent.ErrUnsatisfiable) || sol == nil || len(got) != 1 {
			t.Errorf("got %v, %v, %s", err, sol, got)
		}
	})
}

func TestLastPlan(t *testing.T) {
	for _, tt := range []struct {
		name    string
		context string
		calls   int
		mode    agent.PlanMode
		ok      bool
	}{
		{"none", `[{"type":"input","x":1}]`, 0, agent.PlanEager, false},
		{"eager by default", `[{"type":"plan","plan":[{"_tool":"a"}]}]`, 1, agent.PlanEager, true},
		{"the last one", `[{"type":"plan","plan":[{"_tool":"a"}]},{"type":"plan","mode":"lazy","plan":[{"_tool":"a"},{"_tool":"b"}]}]`, 2, agent.PlanLazy, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls, mode, ok := agent.LastPlan(planCtx(t, tt.context))
			if len(calls) != tt.calls || mode != tt.mode || ok != tt.ok {
				t.Errorf("got %d calls, %q, %v", len(calls), mode, ok)
			}
		})
	}
}

// A plan message's mode decides whether the loop runs the model's calls,
// and the request tells the model which: both read the same "mode". One
// that is neither eager nor lazy (a typo of lazy, say) is an error naming
// the message, rather than a run that executes the calls a person meant
// to approve first.
func TestPlanMode(t *testing.T) {
	for _, tt := range []struct {
		name, plan string
		lazy       bool
		err        string
	}{
		{"lazy", `{"type":"plan","mode":"lazy","plan":[]}`, true, ""},
		{"eager", `{"type":"plan","mode":"eager","plan":[]}`, false, ""},
		{"eager, lazy said elsewhere", `{"type":"plan","mode":"eager","note":"lazy","plan":[]}`, false, ""},
		{"a typo", `{"type":"plan","mode":"Lazy","plan":[]}`, false, `agent: message 1 (plan): plan mode "Lazy": want eager or lazy`},
		{"not a string", `{"type":"plan","mode":1,"plan":[]}`, false, `agent: message 1 (plan): plan mode 1: want eager or lazy`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.Solutions(`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{"done":true}}`)
			res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: echoReg()}, anyOut,
				ctxOf(t, `[{"type":"tool","tool":"put"},`+tt.plan+`,{"type":"text","text":"go"}]`))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got %v, want %s", err, tt.err)
				}
				if _, ok := errors.AsType[*agent.MessageError](err); !ok {
					t.Errorf("%v is no *MessageError", err)
				}
				if n := len(p.Requests()); n != 0 {
					t.Errorf("%d requests made", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Plan) > 0; got != tt.lazy {
				t.Errorf("the run only planned: %v, want %v", got, tt.lazy)
			}
			told := strings.Contains(string(sent(t, p.Requests()[0])), "Lazy mode: only plan")
			if told != tt.lazy {
				t.Errorf("the model was told to only plan: %v, want %v", told, tt.lazy)
			}
		})
	}
}

// The lazy flow of plan.md: a run plans, a person approves, ExecutePlan
// runs the plan. The log then says the plan ran (an eager plan message
// after the lazy one), so the model of the next run is not told that
// nothing runs until it is approved, and that run executes its calls
// rather than planning again.
func TestExecutePlanOfALazyRun(t *testing.T) {
	reg := echoReg()
	p := scripted.Solutions(
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":{"done":true}}`)
	cfg := agent.Config{Provider: p, Registry: reg, Clock: fixedClock}
	planned, err := agent.Run(context.Background(), cfg, anyOut,
		ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"plan","mode":"lazy","plan":[]},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(planned.Plan) != 1 {
		t.Fatalf("planned %s", planned.Plan)
	}
	ran, err := agent.ExecutePlan(context.Background(), cfg, planned.Plan, planned.Log.Messages())
	if err != nil {
		t.Fatal(err)
	}
	if calls, mode, _ := agent.LastPlan(ran.Log.Messages()); mode != agent.PlanEager || len(calls) != 1 {
		t.Errorf("the last plan after running it: %s, %q", calls, mode)
	}
	next, err := agent.Run(context.Background(), cfg, anyOut, ran.Log.Messages())
	if err != nil {
		t.Fatal(err)
	}
	if next.Plan != nil {
		t.Errorf("the next run only planned: %s", next.Plan)
	}
	if got := strictValue(t, next.Log, "", "†state"); got != `{"a":1,"b":2}` {
		t.Errorf("state %s", got)
	}
	text := string(sent(t, p.Requests()[1]))
	if last := text[strings.LastIndex(text, "## Plan"):]; strings.Contains(last, "Lazy mode") {
		t.Errorf("the model was told the plan that ran waits for approval:\n%s", last)
	}
}
