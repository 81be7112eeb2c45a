package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

type forecastParams struct {
	City string `json:"city" jsonschema_description:"A city, e.g. Paris"`
	Days int    `json:"days,omitempty" jsonschema:"minimum=1,maximum=7"`
}

type forecast struct {
	City  string    `json:"city"`
	Highs []float64 `json:"highs"`
}

func forecastFunc(_ context.Context, p forecastParams) (forecast, error) {
	highs := []float64{}
	for i := range max(p.Days, 1) {
		highs = append(highs, 20+float64(i))
	}
	return forecast{City: p.City, Highs: highs}, nil
}

// forecastDef is what Func registers for forecastFunc: the parameters'
// schema, the description after its type, and the result's schema as
// _output.
const forecastDef = `{"type":"object","description":"Daily highs in a city","properties":{` +
	`"city":{"type":"string","description":"A city, e.g. Paris"},` +
	`"days":{"type":"integer","maximum":7,"minimum":1},` +
	`"_output":{"type":"object","properties":{"city":{"type":"string"},"highs":{"type":"array","items":{"type":"number"}}},"required":["city","highs"],"additionalProperties":false}},` +
	`"required":["city"],"additionalProperties":false}`

// runForecast runs a two-step loop that calls forecast, and returns the
// requests the model got (as JSON) and the log.
func runForecast(t *testing.T, reg *agent.Registry, offer message.Message) ([]string, []message.Message) {
	t.Helper()
	p := scripted.Solutions(
		`{"calls":[{"_tool":"forecast","city":"†input.city","days":2,"_outputPath":"†state.forecast"}],"output":null}`,
		`{"calls":[],"output":{"warm":true}}`,
	)
	in, err := message.Input(map[string]string{"city": "Lyon"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Provider: p, Registry: reg, Clock: fixed}
	res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"warm":{"type":"boolean"}}}`),
		[]message.Message{message.System("Say whether it will be warm."), offer, in})
	if err != nil {
		t.Fatal(err)
	}
	var reqs []string
	for _, r := range p.Requests() {
		b, _ := json.Marshal(r)
		reqs = append(reqs, string(b))
	}
	return reqs, res.Log.Messages()
}

// Func registers what Tool, Activity and Bind register: the same
// definition, and runs that the model and the log cannot tell apart.
func TestFuncIsToolActivityAndBind(t *testing.T) {
	byFunc := agent.NewRegistry()
	if err := agent.Func(byFunc, "forecast", "Daily highs in a city", forecastFunc); err != nil {
		t.Fatal(err)
	}
	def, err := byFunc.LookupTool("forecast")
	if err != nil {
		t.Fatal(err)
	}
	if string(def) != forecastDef {
		t.Errorf("definition\n%s\nwant\n%s", def, forecastDef)
	}

	byHand := agent.NewRegistry()
	byHand.Tool("forecast", json.RawMessage(forecastDef))
	byHand.Activity("forecast", agent.Bind(forecastFunc))

	gotReqs, gotLog := runForecast(t, byFunc, message.Tool("forecast"))
	wantReqs, wantLog := runForecast(t, byHand, message.Tool("forecast"))
	if diff := cmp.Diff(gotReqs, wantReqs); diff != "" {
		t.Errorf("requests (-Func +Tool/Activity/Bind):\n%s", diff)
	}
	if diff := cmp.Diff(gotLog, wantLog); diff != "" {
		t.Errorf("log (-Func +Tool/Activity/Bind):\n%s", diff)
	}
	// The function ran: its result is in the state.
	l, err := message.NewLog(gotLog...)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := l.Lookup("state", []string{"forecast"}); err != nil || string(v) != `{"city":"Lyon","highs":[20,21]}` {
		t.Errorf("state.forecast = %s, %v", v, err)
	}
}

func TestFuncErrors(t *testing.T) {
	ok := func(context.Context, forecastParams) (string, error) { return "", nil }
	for _, tt := range []struct {
		name     string
		setup    func(reg *agent.Registry)
		register func(reg *agent.Registry) error
		want     string
		dup      bool
	}{
		{"empty name", nil, func(reg *agent.Registry) error { return agent.Func(reg, "", "", ok) },
			`agent: Func: invalid tool name "": empty`, false},
		{"meta name", nil, func(reg *agent.Registry) error { return agent.Func(reg, "_tool", "", ok) },
			`agent: Func: invalid tool name "_tool": a leading _ marks a meta-property`, false},
		{"Tool. name", nil, func(reg *agent.Registry) error { return agent.Func(reg, "Tool.search", "", ok) },
			`agent: Func: invalid tool name "Tool.search": "Tool.x" is another name for the tool x`, false},
		{"nil function", nil, func(reg *agent.Registry) error {
			return agent.Func[forecastParams, string](reg, "f", "", nil)
		}, `agent: Func "f": nil function`, false},
		{"parameters without a schema", nil, func(reg *agent.Registry) error {
			return agent.Func(reg, "f", "", func(context.Context, struct{ C chan int }) (string, error) { return "", nil })
		}, `agent: Func "f": parameters: struct { C chan int } has no JSON Schema: unsupported type chan int`, false},
		{"result without a schema", nil, func(reg *agent.Registry) error {
			return agent.Func(reg, "f", "", func(context.Context, forecastParams) (func(), error) { return nil, nil })
		}, `agent: Func "f": result: func() has no JSON Schema: unsupported type func()`, false},
		{"a description cut at a comma", nil, func(reg *agent.Registry) error {
			return agent.Func(reg, "f", "", func(context.Context, struct {
				X int `json:"x" jsonschema:"description=The number, as written"`
			}) (string, error) {
				return "", nil
			})
		}, `agent: Func "f": parameters: schema of struct { X int "json:\"x\" jsonschema:\"description=The number, as written\"" }: ` +
			`struct { X int "json:\"x\" jsonschema:\"description=The number, as written\"" }.X: jsonschema tag part " as written" is not keyword=value: ` +
			`a description with commas goes in a jsonschema_description tag, or escape each comma, written \\, in the struct tag`, false},
		{"parameters not an object", nil, func(reg *agent.Registry) error {
			return agent.Func(reg, "f", "", func(context.Context, string) (string, error) { return "", nil })
		}, `agent: Func "f": parameters: string has the schema {"type":"string"}, not an object's: use a struct`, false},
		{"tool taken", func(reg *agent.Registry) { reg.Tool("f", json.RawMessage(`{"type":"object"}`)) },
			func(reg *agent.Registry) error { return agent.Func(reg, "f", "", ok) },
			`agent: already registered: tool "f"`, true},
		{"activity taken", func(reg *agent.Registry) { reg.Activity("f", agent.Bind(ok)) },
			func(reg *agent.Registry) error { return agent.Func(reg, "f", "", ok) },
			`agent: already registered: activity "f"`, true},
		{"twice", func(reg *agent.Registry) {
			if err := agent.Func(reg, "f", "", ok); err != nil {
				t.Fatal(err)
			}
		}, func(reg *agent.Registry) error { return agent.Func(reg, "f", "", ok) },
			`agent: already registered: tool "f"`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			if tt.setup != nil {
				tt.setup(reg)
			}
			before, _ := reg.Offer()
			err := tt.register(reg)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %s", err, tt.want)
			}
			if got := errors.Is(err, agent.ErrDuplicate); got != tt.dup {
				t.Errorf("errors.Is(err, ErrDuplicate) = %v, want %v", got, tt.dup)
			}
			// Nothing was registered.
			if after, _ := reg.Offer(); string(after.Tool) != string(before.Tool) {
				t.Errorf("tools %s after the error, were %s", after.Tool, before.Tool)
			}
		})
	}
}

// A result must meet R's schema, which encoding/json's null for a nil
// slice does not: the call fails with a runtime error the model reads.
func TestFuncResultMeetsItsSchema(t *testing.T) {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "forecast", "", func(context.Context, forecastParams) (forecast, error) {
		return forecast{City: "Lyon"}, nil // Highs is nil
	}); err != nil {
		t.Fatal(err)
	}
	p := scripted.Solutions(`{"calls":[{"_tool":"forecast","city":"Lyon","_outputPath":"†state.f"}],"output":null}`, `{"calls":[],"output":"ok"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed},
		json.RawMessage(`{"type":"string"}`), []message.Message{message.Tool("forecast")})
	if err != nil {
		t.Fatal(err)
	}
	got := errorTexts(res.Log)
	want := []string{"runtime error in forecast: result does not match the tool's _output: at /highs: expected array, got null; the result: {\"city\":\"Lyon\",\"highs\":null}"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("errors (-got +want):\n%s", diff)
	}
}

// P may declare meta-properties, as Bind says: the function gets those
// as the call has them, and not the others.
func TestFuncParamsDeclareMeta(t *testing.T) {
	reg := agent.NewRegistry()
	type where struct {
		OutputPath string `json:"_outputPath"`
		Instance   string `json:"_instance,omitempty"`
		X          int    `json:"x"`
	}
	var got []where
	if err := agent.Func(reg, "where", "Says where its result goes.", func(_ context.Context, p where) (int, error) {
		got = append(got, p)
		return p.X, nil
	}); err != nil {
		t.Fatal(err)
	}
	p := scripted.Solutions(`{"calls":[{"_tool":"where","x":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":"ok"}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed},
		json.RawMessage(`{"type":"string"}`), []message.Message{message.Tool("where")})
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) > 0 {
		t.Errorf("errors %q", errs)
	}
	if diff := cmp.Diff(got, []where{{OutputPath: "†state.a", X: 1}}); diff != "" {
		t.Errorf("the function got (-got +want):\n%s", diff)
	}
}
