package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// The output streams to the caller as the model writes it: with a string
// output, each piece's Text is the text it adds, escapes decoded, as a
// chat shows it (docs/request.md, Streaming).
func ExampleEvents() {
	// A scripted model stands in for a real provider here; it streams its
	// answer in two chunks.
	model := scripted.New(scripted.Response{Chunks: []string{`{"output":"Bonjour, `, `Ad\u00e8le !"}`}})
	msgs := []message.Message{message.Text("Greet Adèle in French.")}
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: model}, json.RawMessage(`{"type":"string"}`), msgs) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Kind == agent.EventOutput {
			fmt.Printf("%q\n", ev.Output.Text)
		}
	}
	// Output:
	// "Bonjour, "
	// "Adèle !"
}

// Stream hands over each call as soon as it is complete, while the rest
// of the answer still streams (Config.CallbackPath), then the Response
// (docs/request.md, Streaming).
func ExampleStream() {
	// A scripted model stands in for a real provider here; it streams its
	// answer in three chunks.
	model := scripted.New(scripted.Response{Chunks: []string{
		`{"calls":[{"_tool":"search","q":"Oslo"},`,
		`{"_tool":"search","q":"Lisbon"}],`,
		`"output":null}`,
	}})
	reg := agent.NewRegistry()
	reg.Tool("search", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`))
	cfg := agent.Config{Provider: model, Registry: reg, CallbackPath: "calls"}
	msgs := []message.Message{message.Tool("search"), message.Text("Look up Oslo and Lisbon.")}
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs) {
		switch {
		case err != nil:
			fmt.Println(err)
			return
		case ev.Element != nil:
			fmt.Printf("call at %s: %s\n", ev.Element.Path, ev.Element.Value)
		case ev.Response != nil:
			fmt.Println("solutions:", len(ev.Response.Solutions))
		}
	}
	// Output:
	// call at calls.0: {"_tool":"search","q":"Oslo"}
	// call at calls.1: {"_tool":"search","q":"Lisbon"}
	// solutions: 1
}

// A preset bundles messages and request settings under a name; a preset
// message in the context stands for them (docs/request.md, Presets).
func ExampleRegistry_Preset() {
	reg := agent.NewRegistry()
	t := 0.2
	reg.Preset("Coach", agent.Preset{Messages: []message.Message{message.System("You are a running coach.")}, Model: "gpt-5-mini", Temperature: &t})
	coach, err := message.Parse([]byte(`{"type":"preset","preset":"Coach"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// A scripted model stands in for a real provider here.
	model := scripted.Solutions(`{"output":"Walk first, then run slowly."}`)
	msgs := []message.Message{coach, message.Text("How do I start running?")}
	res, err := agent.Run(context.Background(), agent.Config{Provider: model, Registry: reg}, json.RawMessage(`{"type":"string"}`), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := model.Requests()[0]
	fmt.Println("model:", req.Model, "temperature:", *req.Temperature)
	for _, m := range req.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text)
	}
	fmt.Println(string(res.Solution.Output))
	// Output:
	// model: gpt-5-mini temperature: 0.2
	// system: You are a running coach.
	// user: How do I start running?
	// "Walk first, then run slowly."
}

func ExampleRequest() {
	// A scripted model stands in for a real provider here.
	model := scripted.Solutions(`{"output":{"capital":"Paris"}}`)
	msgs := []message.Message{message.Text("What is the capital of France?")}
	schema := json.RawMessage(`{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]}`)

	resp, err := agent.Request(context.Background(), agent.Config{Provider: model}, schema, msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(resp.Solutions[0].Output))
	// Output: {"capital":"Paris"}
}

func ExampleRun() {
	reg := agent.NewRegistry()
	reg.Tool("add", json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`))
	reg.Activity("add", agent.Bind(func(ctx context.Context, p struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}) (float64, error) {
		return p.A + p.B, nil
	}))
	// Step 1 calls add with a value from the input and writes the sum to
	// state; step 2 reads it into the output.
	model := scripted.Solutions(
		`{"calls":[{"_tool":"add","a":"†input.x","b":2,"_outputPath":"†state.sum"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	)
	msgs := []message.Message{
		{Type: message.TypeTool, Tool: json.RawMessage(`"add"`)},
		message.Data(message.KindInput, json.RawMessage(`{"x":40}`)),
	}
	res, err := agent.Run(context.Background(), agent.Config{Provider: model, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, _ := res.Log.Lookup("state", []string{"sum"})
	fmt.Println(res.Steps, string(sum), string(res.Solution.Output))
	// Output: 2 42 {"done":true}
}

// A conversation, one run a turn: each turn's context is the log of the
// turn before, its answer as an assistant message and the user's next
// message, so each turn's requests extend the turn before's.
func ExampleRun_conversation() {
	// A scripted model stands in for a real provider here.
	model := scripted.Solutions(`{"output":"Hello, Ada."}`, `{"output":"You are Ada."}`)
	cfg := agent.Config{Provider: model}
	reply := json.RawMessage(`{"type":"string"}`)
	msgs := []message.Message{message.System("You are a friendly assistant.")}
	for _, said := range []string{"Hi, I am Ada.", "Who am I?"} {
		msgs = append(msgs, message.Text(said))
		res, err := agent.Run(context.Background(), cfg, reply, msgs)
		if err != nil {
			fmt.Println(err)
			return
		}
		var text string
		_ = json.Unmarshal(res.Solution.Output, &text)
		fmt.Println(text)
		msgs = append(res.Log.Messages(), message.Assistant(text))
	}
	last := model.Requests()[1].Messages
	fmt.Printf("the second turn's request: %d messages, the last %q\n", len(last), last[len(last)-1].Text)
	// Output:
	// Hello, Ada.
	// You are Ada.
	// the second turn's request: 4 messages, the last "Who am I?"
}

// A durable conversation, one run for all its turns: Continue adds the
// run's answer and the user's next message to its journal and goes on,
// so the store keeps each message once.
func ExampleContinue() {
	ctx := context.Background()
	// A scripted model stands in for a real provider here.
	model := scripted.Solutions(`{"output":"Hello, Ada."}`, `{"output":"You are Ada."}`)
	st := store.NewMemory()
	cfg := agent.Config{Provider: model, Store: st, RunID: "chat-1"}
	reply := json.RawMessage(`{"type":"string"}`)
	res, err := agent.Run(ctx, cfg, reply, []message.Message{message.System("You are a friendly assistant."), message.Text("Hi, I am Ada.")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Solution.Output))
	// The next turn, in this process or another: the run's settings and
	// schema come from the store.
	res, err = agent.Continue(ctx, agent.Config{Provider: model, Store: st}, "chat-1", message.Text("Who am I?"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Solution.Output))
	last := model.Requests()[1].Messages
	fmt.Printf("the second turn's request: %d messages, the answer before %s\n", len(last), last[len(last)-2].Text)
	// Output:
	// "Hello, Ada."
	// "You are Ada."
	// the second turn's request: 4 messages, the answer before "Hello, Ada."
}
