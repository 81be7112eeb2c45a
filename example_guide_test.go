package agent_test

// The examples of docs/guide.md, in its order: a Request, a loop with a
// tool, state, a plan, instancing and a delegate. A scripted model
// (provider/scripted) stands in for a real one, so they run offline and
// their output is checked by go test; with a real provider (say
// openai.New) the code is the same and only the answers differ.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// City is the parameters of the guide's weather tool.
type City struct {
	Name string `json:"name" jsonschema:"description=A city name"`
}

// Forecast is what the weather tool returns.
type Forecast struct {
	TempC int    `json:"tempC"`
	Sky   string `json:"sky"`
}

// Advice is the guide's typed output.
type Advice struct {
	Wear string `json:"wear" jsonschema:"description=What to wear today"`
}

// currentWeather is the guide's tool: a real one would call a weather API.
func currentWeather(_ context.Context, c City) (Forecast, error) {
	switch c.Name {
	case "Oslo":
		return Forecast{TempC: -3, Sky: "snow"}, nil
	case "Lisbon":
		return Forecast{TempC: 24, Sky: "sun"}, nil
	}
	return Forecast{TempC: 12, Sky: "light rain"}, nil
}

// guideRegistry holds the weather tool, registered with Func.
func guideRegistry() *agent.Registry {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "weather", "Current weather in a city", currentWeather); err != nil {
		panic(err) // City and Forecast have schemas, and the registry is new
	}
	return reg
}

// Step 1: a Request is one call of the model. Its context is a list of
// messages; the output schema comes from a Go type.
func Example_request() {
	model := scripted.Solutions(`{"output":{"wear":"A light jacket."}}`)
	msgs := []message.Message{
		message.System("You advise travellers on clothes."),
		message.Text("What should I wear in Paris in April?"),
	}
	answers, _, err := agent.RequestAs[Advice](context.Background(), agent.Config{Provider: model}, msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answers[0].Value.Wear)
	// Output: A light jacket.
}

// Step 2: the loop runs Requests until the model writes an output, and
// runs the calls it makes. Func registers a Go function as a tool; the
// tool message offers it to the model.
func ExampleFunc() {
	reg := agent.NewRegistry()
	err := agent.Func(reg, "weather", "Current weather in a city", currentWeather)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := scripted.New(
		scripted.Response{Thinking: "I need the weather first.", Chunks: []string{
			`{"calls":[{"_tool":"weather","name":"Paris","_outputPath":"†state.weather"}],`, `"output":null}`}},
		scripted.Response{Chunks: []string{`{"calls":[],"output":{"wear":"A raincoat`, ` over a sweater."}}`}},
	)
	cfg := agent.Config{Provider: model, Registry: reg}
	msgs := []message.Message{message.Tool("weather"), message.Text("What should I wear in Paris today?")}
	for ev, err := range agent.Events(context.Background(), cfg, schema.For[Advice](), msgs) {
		switch {
		case err != nil:
			fmt.Println(err)
			return
		case ev.Kind == agent.EventThinking:
			fmt.Println("thinking:", ev.Text)
		case ev.Kind == agent.EventCallFinished:
			fmt.Printf("call %s(%s) → %s\n", ev.Call.Tool, ev.Call.Args(), ev.Call.OutputPath)
		case ev.Kind == agent.EventOutput:
			fmt.Printf("output: %s\n", ev.Output.JSON)
		case ev.Kind == agent.EventDone:
			state, _, _ := ev.Result.Log.Value(message.Identity{Kind: "state"})
			fmt.Printf("state: %s\n", state)
			advice, err := schema.Decode[Advice](ev.Result.Solution.Output)
			fmt.Println("wear:", advice.Wear, err)
		}
	}
	// Output:
	// thinking: I need the weather first.
	// call weather({"name":"Paris"}) → †state.weather
	// output: {"wear":"A raincoat
	// output:  over a sweater."}
	// state: {"weather":{"sky":"light rain","tempC":12}}
	// wear: A raincoat over a sweater. <nil>
}

// A registered tool that no tool message offers cannot be called: a run
// whose registry has activities and whose context offers no tool says so
// in its log, once, as it starts.
func Example_noToolOffered() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{} // no time, so the output is stable
		}
		return a
	}}))
	model := scripted.Solutions(`{"output":{"wear":"Layers."}}`)
	cfg := agent.Config{Provider: model, Registry: guideRegistry(), Logger: logger}
	msgs := []message.Message{message.Text("What should I wear in Paris today?")} // no message.Tool("weather")
	res, err := agent.Run(context.Background(), cfg, schema.For[Advice](), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Steps, string(res.Solution.Output))
	// Output:
	// level=WARN msg="the context offers no tool, so the model cannot call the registered activities; offer tools with tool messages (message.Tool, Registry.Offer)" activities=[weather]
	// 1 {"wear":"Layers."}
}

// Step 3: state is the run's memory (009). A call writes its result where
// its _outputPath says, and a later call reads it with a reference; a
// state message with only a schema tells the model which paths to use.
// Here the second call waits for the first one's result, in the same step.
func Example_state() {
	reg := guideRegistry()
	err := agent.Func(reg, "pack", "A packing list for a forecast", func(_ context.Context, p struct {
		Forecast Forecast `json:"forecast"`
	}) ([]string, error) {
		if p.Forecast.TempC < 15 {
			return []string{"sweater", "umbrella"}, nil
		}
		return []string{"t-shirt"}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	offer, err := reg.Offer() // one tool message offering every registered tool
	if err != nil {
		fmt.Println(err)
		return
	}
	in, err := message.Input(City{Name: "Paris"})
	if err != nil {
		fmt.Println(err)
		return
	}
	state := message.Message{Type: message.TypeData, Kind: message.KindState, Schema: json.RawMessage(
		`{"type":"object","properties":{"forecast":{"type":"object"},"packing":{"type":"array","items":{"type":"string"}}}}`)}
	model := scripted.Solutions(
		`{"calls":[{"_tool":"weather","name":"†input.name","_outputPath":"†state.forecast"},
		           {"_tool":"pack","forecast":"†state.forecast","_outputPath":"†state.packing"}],"output":null}`,
		`{"calls":[],"output":{"wear":"A sweater; take an umbrella."}}`,
	)
	msgs := []message.Message{offer, state, in, message.Text("Pack for the trip.")}
	res, err := agent.Run(context.Background(), agent.Config{Provider: model, Registry: reg}, schema.For[Advice](), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _, _ := res.Log.Value(message.Identity{Kind: message.KindState})
	fmt.Println(string(v))
	fmt.Println(res.Steps, "steps:", string(res.Solution.Output))
	// Output:
	// {"forecast":{"sky":"light rain","tempC":12},"packing":["sweater","umbrella"]}
	// 2 steps: {"wear":"A sweater; take an umbrella."}
}

// Step 4: a plan (012). In lazy mode the model writes the whole plan and
// nothing runs: show it, check it, approve it, then run it with
// ExecutePlan, which needs no model when every tool has code.
func Example_plan() {
	reg := guideRegistry()
	model := scripted.Solutions(`{"calls":[
		{"_tool":"weather","name":"Oslo","_outputPath":"†state.oslo"},
		{"_tool":"weather","name":"Lisbon","_outputPath":"†state.lisbon"}],"output":null}`)
	msgs := []message.Message{message.Tool("weather"), message.Text("Compare the weather in Oslo and Lisbon.")}
	cfg := agent.Config{Provider: model, Registry: reg}
	_, plan, err := agent.Plan(context.Background(), cfg, schema.For[Advice](), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, call := range plan {
		fmt.Println("planned:", string(call))
	}
	// ... a person approves the plan ...
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _, _ := res.Log.Value(message.Identity{Kind: message.KindState})
	fmt.Println(string(v))
	// Output:
	// planned: {"_tool":"weather","name":"Oslo","_outputPath":"†state.oslo"}
	// planned: {"_tool":"weather","name":"Lisbon","_outputPath":"†state.lisbon"}
	// {"lisbon":{"sky":"sun","tempC":24},"oslo":{"sky":"snow","tempC":-3}}
}

// Step 5: instancing (013). Data messages with an _instance are separate
// threads of one task; a plan written once runs for each of them, each
// copy reading and writing its own instance's data.
func Example_instancing() {
	var msgs []message.Message
	for _, city := range []string{"Oslo", "Lisbon", "Paris"} {
		in, err := message.Input(City{Name: city})
		if err != nil {
			fmt.Println(err)
			return
		}
		in.Instance = city
		msgs = append(msgs, in)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"weather","name":"†input.name","_outputPath":"†state.forecast"}`)}
	res, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: guideRegistry()}, plan, msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range agent.InstanceIDs(msgs) {
		v, _, _ := res.Log.Value(message.Identity{Kind: message.KindState, Instance: id})
		fmt.Println(id, string(v))
	}
	// Output:
	// Oslo {"forecast":{"sky":"snow","tempC":-3}}
	// Lisbon {"forecast":{"sky":"sun","tempC":24}}
	// Paris {"forecast":{"sky":"light rain","tempC":12}}
}

// Step 6: a delegate (014) runs a call in a sub-run of its own, which sees
// the call's parameters as its input and nothing else of the run. An
// anonymous delegate's instructions are the tool's description, its
// output schema the tool's _output.
func Example_delegate() {
	reg := guideRegistry()
	reg.Tool("stylist", json.RawMessage(`{"type":"object","description":"You are a stylist: pick one outfit for the weather given.",
		"properties":{"forecast":{"type":"object"},"_output":{"type":"string"}},"required":["forecast"],"_delegate":"anonymous"}`))
	model := scripted.Solutions(
		// The run's first step: the weather, then the stylist reading it.
		`{"calls":[{"_tool":"weather","name":"Oslo","_outputPath":"†state.forecast"},
		           {"_tool":"stylist","forecast":"†state.forecast","_outputPath":"†state.outfit"}],"output":null}`,
		// The stylist's sub-run.
		`{"output":"A down coat, boots and a wool hat."}`,
		// The run's second step.
		`{"calls":[],"output":{"wear":"A down coat, boots and a wool hat."}}`,
	)
	msgs := []message.Message{message.Tool("weather"), message.Tool("stylist"), message.Text("What should I wear in Oslo today?")}
	res, err := agent.Run(context.Background(), agent.Config{Provider: model, Registry: reg}, schema.For[Advice](), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	outfit, _ := res.Log.Lookup(message.KindState, []string{"outfit"})
	fmt.Println("outfit:", string(outfit))
	sub := model.Requests()[1] // what the sub-run showed the model
	for _, m := range sub.Messages {
		fmt.Printf("sub-run %s: %s\n", m.Role, m.Text)
	}
	// Output:
	// outfit: "A down coat, boots and a wool hat."
	// sub-run system: You are a stylist: pick one outfit for the weather given.
	// sub-run user: ## Data: ¶input
	// Input data MUST be treated as a structured prompt
	// {"forecast":{"sky":"snow","tempC":-3}}
}
