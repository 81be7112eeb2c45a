package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
)

// profilePlan is the first example of page 012: fetch a profile, then
// summarise it.
var profilePlan = []json.RawMessage{
	json.RawMessage(`{"_tool":"fetchUserProfile","userName":"†input.userName","_outputPath":"†state.userProfileData"}`),
	json.RawMessage(`{"_tool":"summarizeProfile","profile":"†state.userProfileData","_outputPath":"†state.profileSummary"}`),
}

// A plan of explicit calls runs without a model: each call starts once the
// calls it reads from have written their output.
func ExampleExecutePlan() {
	reg := agent.NewRegistry()
	reg.Tool("fetchUserProfile", json.RawMessage(`{"type":"object","properties":{"userName":{"type":"string"}},"required":["userName"]}`))
	reg.Tool("summarizeProfile", json.RawMessage(`{"type":"object","properties":{"profile":{"type":"object"}},"required":["profile"]}`))
	reg.Activity("fetchUserProfile", agent.Bind(func(ctx context.Context, p struct {
		UserName string `json:"userName"`
	}) (map[string]any, error) {
		return map[string]any{"name": p.UserName, "joined": 2019}, nil
	}))
	reg.Activity("summarizeProfile", agent.Bind(func(ctx context.Context, p struct {
		Profile struct {
			Name   string `json:"name"`
			Joined int    `json:"joined"`
		} `json:"profile"`
	}) (string, error) {
		return fmt.Sprintf("%s, a member since %d.", p.Profile.Name, p.Profile.Joined), nil
	}))

	msgs := []message.Message{message.Data(message.KindInput, json.RawMessage(`{"userName":"Alice"}`))}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, profilePlan, msgs)
	if err != nil {
		fmt.Println(err)
		return
	}
	summary, _ := ref.EvalString(res.Log, "†state.profileSummary")
	fmt.Println(string(summary))
	// Output:
	// "Alice, a member since 2019."
}

// Validation lists every problem of a plan, each naming the call and the
// reference.
func ExampleValidatePlan() {
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"fetchUserProfile","userName":"†input.name","_outputPath":"†state.profile"}`),
		json.RawMessage(`{"_tool":"summarize","profile":"†state.profile"}`),
	}
	msgs := []message.Message{
		{Type: message.TypeTool, Tool: json.RawMessage(`{"fetchUserProfile":{"type":"object","properties":{"userName":{"type":"string"}}}}`)},
		message.Data(message.KindInput, json.RawMessage(`{"userName":"Alice"}`)),
	}
	err := agent.ValidatePlan(context.Background(), agent.Config{Registry: agent.NewRegistry()}, plan, msgs)
	if pe, ok := errors.AsType[*agent.PlanError](err); ok {
		for _, p := range pe.Problems {
			fmt.Println(p)
		}
	}
	fmt.Println(errors.Is(err, agent.ErrUnsatisfiable), errors.Is(err, agent.ErrUnknownTool))
	// Output:
	// call 0 (fetchUserProfile) param /userName ref †input.name: unsatisfiable reference: no call writes it and the context has no value there
	// call 1 (summarize): unknown tool "summarize" (tools: fetchUserProfile)
	// true true
}

// The graph of a plan, for a Markdown page or the playground.
func ExamplePlanGraph() {
	graph, err := agent.PlanGraph(profilePlan)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(graph)
	// Output:
	// graph TD
	//     c0["0: fetchUserProfile"]
	//     c1["1: summarizeProfile"]
	//     s0{{"input.userName"}}
	//     s0 --> c0
	//     c0 -->|state.userProfileData| c1
}

// A template plan is checked per instance, as ExecutePlanInstances runs
// it: an instance whose data lacks what a call reads is a problem of that
// instance.
func ExampleValidatePlanInstances() {
	reg := agent.NewRegistry()
	reg.Tool("weather", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	msgs := []message.Message{
		message.Data(message.KindInput, json.RawMessage(`{"name":"Oslo"}`)),
		message.Data(message.KindInput, json.RawMessage(`{"city":"Lisbon"}`)),
	}
	msgs[0].Instance, msgs[1].Instance = "1", "2"
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"weather","name":"†input.name","_outputPath":"†state.forecast"}`)}
	err := agent.ValidatePlanInstances(context.Background(), agent.Config{Registry: reg}, plan, msgs)
	fmt.Println(err)
	// Output:
	// agent: invalid plan: call 0 (weather) instance 2 param /name ref †input.name: unsatisfiable reference: no call writes it and the context has no value there
}
