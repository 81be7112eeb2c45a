// Command quickstart is a first agent: a Go function as its tool, a typed answer, and
// the run's events as they happen, from OpenAI or any server that speaks its API.
package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/schema"
)

type Advice struct {
	Wear string `json:"wear" jsonschema_description:"What to wear today"`
}

func main() {
	model, err := openai.New(openai.Config{Model: cmp.Or(os.Getenv("OPENAI_MODEL"), "gpt-5-mini")}) // and OPENAI_API_KEY, OPENAI_BASE_URL
	check(err)
	check(agent.Func(nil, "weather", "Current weather in a city", func(_ context.Context, p struct{ City string }) (string, error) {
		return "12°C and light rain in " + p.City, nil // call a weather API here
	}))
	msgs := []message.Message{message.Tool("weather"), message.Text("What should I wear in Paris today?")}
	for ev, err := range agent.Events(context.Background(), agent.Config{Provider: model}, schema.For[Advice](), msgs) {
		check(err)
		switch ev.Kind {
		case agent.EventCallStarted:
			fmt.Printf("%s(%s)\n", ev.Call.Tool, ev.Call.Args())
		case agent.EventOutput:
			fmt.Print(ev.Output.JSON)
		case agent.EventDone:
			advice, err := schema.Decode[Advice](ev.Result.Solution.Output)
			check(err)
			fmt.Println("\nwear:", advice.Wear)
		}
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
