package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/store/sqlite"
)

// A durable run is journaled in a store as it goes; Resume continues it
// from the journal, in this process or another (docs/durable.md). Resume
// of a run that ended returns its result and runs nothing again.
func ExampleResume() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "acts")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "acts.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	reg := guideRegistry()
	var msgs []message.Message
	for _, city := range []string{"Oslo", "Lisbon"} {
		in, err := message.Input(City{Name: city})
		if err != nil {
			fmt.Println(err)
			return
		}
		in.Instance = city
		msgs = append(msgs, in)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"weather","name":"†input.name","_outputPath":"†state.forecast"}`)}
	cfg := agent.Config{Registry: reg, Store: st, RunID: "batch-7"}
	if _, err := agent.ExecutePlanInstances(ctx, cfg, plan, msgs); err != nil {
		fmt.Println(err)
		return
	}
	// … had the process died, a new one would go on from here …
	res, err := agent.Resume(ctx, agent.Config{Registry: reg, Store: st}, "batch-7")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range res.Log.Instances() {
		v, _, _ := res.Log.Value(message.Identity{Kind: message.KindState, Instance: id})
		fmt.Println(id, string(v))
	}
	// Output:
	// Oslo {"forecast":{"sky":"snow","tempC":-3}}
	// Lisbon {"forecast":{"sky":"sun","tempC":24}}
}
