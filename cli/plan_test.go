package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent"
)

func TestPlanCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	invalid := write("invalid.json", `{"context":[{"type":"tool","tool":{"t":{"type":"object"}}},{"type":"input","x":1}],
		"plan":[{"_tool":"t","x":"†state.b","_outputPath":"†state.a"},{"_tool":"t","x":"†state.a","_outputPath":"†state.b"},
		{"_tool":"u"},{"_tool":"t","x":"†input.y"}]}`)
	noPlan := write("noplan.json", `{"schema":{},"context":[{"type":"input","x":1}]}`)
	declared := write("declared.json", `{"schema":{},"context":[{"type":"tool","tool":{"t":{"type":"object"}}},
		{"type":"input","schema":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}},
		{"type":"plan","plan":[{"_tool":"t","x":"†input.x"}]}]}`)
	cycle := write("cycle.json", `[{"_tool":"a","x":"†state.a","_outputPath":"†state.a"}]`)
	const data = "../testdata/plan/"
	const orders, ordersInput = "../examples/orders/orders.json", "../examples/orders/orders.jsonl"
	ordersData, err := os.ReadFile(ordersInput)
	if err != nil {
		t.Fatal(err)
	}
	ordersLines := strings.Join(strings.SplitAfterN(string(ordersData), "\n", 4)[:3], "")
	for _, tt := range []struct {
		name    string
		args    []string
		stdin   string
		stdout  string
		err     string
		isUsage bool
	}{
		{name: "plan and context", args: []string{"validate", data + "payment.json"}, stdout: "ok: 2 calls\n"},
		{name: "idea: its last plan", args: []string{"validate", data + "hotel_idea.json"}, stdout: "ok: 2 calls\n"},
		{name: "array: structure only", args: []string{"validate", data + "profile.json"}, stdout: "ok: 2 calls (structure only)\n"},
		{name: "flag after the file", args: []string{"validate", data + "payment_replan.json", "--structure"}, stdout: "ok: 1 call (structure only)\n"},
		{name: "stdin", args: []string{"validate", "-"}, stdin: `{"plan":[{"_tool":"a"}]}`, stdout: "ok: 1 call (structure only)\n"},
		{
			name: "every problem",
			args: []string{"validate", invalid},
			stdout: "call 0 (t) param /x ref †state.b: dependency cycle: 0 (t) → 1 (t) → 0 (t)\n" +
				"call 2 (u): unknown tool \"u\" (tools: t)\n" +
				"call 3 (t) param /x ref †input.y: unsatisfiable reference: no call writes it and the context has no value there\n",
			err: invalid + ": invalid plan (3 problems)",
		},
		{name: "one problem", args: []string{"validate", cycle}, stdout: "call 0 (a) param /x ref †state.a: dependency cycle: 0 (a) → 0 (a)\n",
			err: cycle + ": invalid plan (1 problem)"},
		{name: "idea without a plan", args: []string{"validate", noPlan}, err: noPlan + ": the idea's context has no plan message"},
		{name: "not a plan", args: []string{"validate", "-"}, stdin: `"calls"`,
			err: `-: a plan file holds an array of calls, {"plan": [...], "context": [...]}, or an Idea with a plan message`},
		{name: "not JSON", args: []string{"validate", "-"}, stdin: `{"plan":[{"_tool":"a",}]}`,
			err: `-: line 1, column 23: invalid character '}' looking for beginning of object key string`},
		{name: "messages, not calls", args: []string{"validate", "-"}, stdin: `[{"_tool":"a"},{"type":"input","x":1}]`,
			err: `-: plan: element 1 is a message (its "type" is "input"), not a call; a plan file holds an array of calls, {"plan": [...], "context": [...]}, or an Idea with a plan message`},
		{name: "calls not JSON", args: []string{"validate", "-"}, stdin: `[{"_tool":"a"`,
			err: `-: plan: line 1, column 13: unexpected end of JSON input`},
		{name: "bad context", args: []string{"validate", "-"}, stdin: `{"plan":[],"context":[{"type":"data","kind":"a b"}]}`,
			err: `-: context: message 0: field "kind": message: invalid: "a b" is not a valid kind (letters, digits, '_' and '-')`},
		{name: "missing file", args: []string{"graph", "nope.json"}, err: "open nope.json: no such file or directory"},
		{
			name: "graph",
			args: []string{"graph", data + "payment.json"},
			stdout: "graph TD\n    c0[\"0: processPayment\"]\n    c1[\"1: confirmOrder\"]\n    s0{{\"input.amount\"}}\n" +
				"    s0 --> c0\n    c0 -->|state.receipt| c1\n",
		},
		{name: "graph of a malformed plan", args: []string{"graph", "-"}, stdin: `[{"x":1}]`, err: "-: agent: invalid plan: call 0: invalid call: the call has no _tool"},
		// A template plan that reads instanced inputs is valid per
		// instance, as acts run runs it, and not without its inputs.
		{name: "instanced inputs", args: []string{"validate", orders, "--input", "@" + ordersInput}, stdout: "ok: 3 calls, 1200 instances\n"},
		{name: "inputs on standard input", args: []string{"validate", orders, "--input", "@-"}, stdin: ordersLines, stdout: "ok: 3 calls, 3 instances\n"},
		{name: "one input", args: []string{"validate", orders, "--input", `{"items":[],"country":"DE","card":"c","address":"a"}`}, stdout: "ok: 3 calls\n"},
		{name: "an instance lacks an input", args: []string{"validate", orders, "--input", `[{"items":[],"country":"DE","card":"c","address":"a"},{"items":[],"country":"FR","card":"c"}]`},
			stdout: "call 2 (ship) instance 2 param /address ref †input.address: unsatisfiable reference: no call writes it and the context has no value there\n",
			err:    orders + ": invalid plan (1 problem)"},
		{name: "no inputs", args: []string{"validate", orders},
			stdout: "call 0 (price) param /country ref †input.country: unsatisfiable reference: no call writes it and the context has no value there\n" +
				"call 0 (price) param /items ref †input.items: unsatisfiable reference: no call writes it and the context has no value there\n" +
				"call 1 (charge) param /card ref †input.card: unsatisfiable reference: no call writes it and the context has no value there\n" +
				"call 2 (ship) param /address ref †input.address: unsatisfiable reference: no call writes it and the context has no value there\n",
			err: orders + ": invalid plan (4 problems)"},
		// The inputs are the context: no tool message defines the tools.
		{name: "calls and an input", args: []string{"validate", "-", "--input", `{"x":1}`}, stdin: `[{"_tool":"a"}]`,
			stdout: "call 0 (a): unknown tool \"a\" (no tool is defined)\n", err: "-: invalid plan (1 problem)"},
		// As acts run takes them: inputs that fit the Idea's declaration.
		{name: "declared input", args: []string{"validate", declared, "--input", `{"x":1}`}, stdout: "ok: 1 call\n"},
		{name: "input that does not fit", args: []string{"validate", declared, "--input", `[{"x":1},{"x":"one"}]`},
			err: "--input: element 2: does not fit the input schema of " + declared + ": at /x: expected integer, got string"},
		{name: "bad input", args: []string{"validate", orders, "--input", "{nope"}, err: "--input: line 1: not valid JSON"},
		{name: "input with structure", args: []string{"validate", orders, "--input", "{}", "--structure"}, err: "usage: --input and --structure: the plan alone reads no input", isUsage: true},
		{name: "input of graph", args: []string{"graph", orders, "--input", "{}"}, err: "usage: --input is for plan validate", isUsage: true},
		{name: "standard input twice", args: []string{"validate", "-", "--input", "@-"}, err: "usage: FILE - and --input @- both read standard input", isUsage: true},
		{name: "no subcommand", args: []string{data + "payment.json"}, err: "usage: plan takes validate or graph, and FILE", isUsage: true},
		{name: "unknown subcommand", args: []string{"run", data + "payment.json"}, err: "usage: plan takes validate or graph, and FILE", isUsage: true},
		{name: "unknown flag", args: []string{"validate", "--fast", data + "payment.json"}, err: "usage: flag provided but not defined: -fast", isUsage: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			err := execute(context.Background(), planCommand, &Env{Stdin: strings.NewReader(tt.stdin), Stdout: &stdout}, tt.args)
			if got := stdout.String(); got != tt.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tt.stdout)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.err != "" && (err == nil || err.Error() != tt.err):
				t.Errorf("error %v, want %s", err, tt.err)
			}
			if errors.Is(err, errUsage) != tt.isUsage {
				t.Errorf("usage error: %v, want %v", errors.Is(err, errUsage), tt.isUsage)
			}
		})
	}
}

// TestPlanValidateAsRun: plan validate checks a plan as acts run would
// run it: with the program's registry (a tool offered by name) and the
// Idea's presets expanded.
func TestPlanValidateAsRun(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("charge", json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`))
	reg.Activity("charge", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return agent.Value("ok") }))
	byName := writeFile(t, "byname.json", `{"schema":{"type":"object"},"context":[{"type":"tool","tool":"charge"},{"type":"input","amount":5},
		{"type":"plan","plan":[{"_tool":"charge","amount":"†input.amount","_outputPath":"†state.receipt"}]}]}`)
	preset := writeFile(t, "preset.json", `{"schema":{"type":"object"},
		"presets":{"tools":{"messages":[{"type":"tool","tool":{"t":{"type":"object","properties":{"x":{}}}}}]}},
		"context":[{"type":"preset","preset":"tools"},{"type":"input","x":1},{"type":"plan","plan":[{"_tool":"t","x":"†input.x","_output":{"ok":true}}]}]}`)
	for _, tt := range []struct {
		name, idea string
	}{
		{"a registered tool offered by name", byName},
		{"a preset of the Idea", preset},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := acts(t.Context(), reg, "plan", "validate", tt.idea)
			if code != 0 || out != "ok: 1 call\n" {
				t.Errorf("plan validate: exit %d, %q, %q", code, out, errOut)
			}
			if code, out, errOut := acts(t.Context(), reg, "run", tt.idea, "--store", "memory:", "--json"); code != 0 {
				t.Errorf("run: exit %d, %q, %q", code, out, errOut)
			}
		})
	}
}

// TestPlanValidateStructureNeedsNoPresets: --structure checks the plan
// alone, so a preset the program lacks is no error; a plan that only a
// preset holds is found without --structure, as the error says.
func TestPlanValidateStructureNeedsNoPresets(t *testing.T) {
	missing := writeFile(t, "missing.json", `{"schema":{"type":"object"},
		"context":[{"type":"preset","preset":"tools-of-another-program"},{"type":"plan","plan":[{"_tool":"t","_outputPath":"†state.a"}]}]}`)
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", "--structure", missing)
	if code != 0 || out != "ok: 1 call (structure only)\n" {
		t.Errorf("--structure: exit %d, %q, %q", code, out, errOut)
	}
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", missing); code != 1 || !strings.Contains(errOut, `unknown preset "tools-of-another-program"`) {
		t.Errorf("without --structure: exit %d, %q", code, errOut)
	}
	inPreset := writeFile(t, "inpreset.json", `{"schema":{"type":"object"},
		"presets":{"p":{"messages":[{"type":"plan","plan":[{"_tool":"t","_outputPath":"†state.a"}]}]}},
		"context":[{"type":"preset","preset":"p"}]}`)
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", "--structure", inPreset); code != 1 || !strings.Contains(errOut, "a preset's plan is found without --structure") {
		t.Errorf("a preset's plan with --structure: exit %d, %q", code, errOut)
	}
}
