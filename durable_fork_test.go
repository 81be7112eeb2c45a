package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// forkSpec is what a loop run's spec says of its turns' contexts.
type forkSpec struct {
	Context int
	Turns   []int
}

func specTurns(t *testing.T, st store.Catalog, id string) forkSpec {
	t.Helper()
	run, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var s forkSpec
	if err := json.Unmarshal(run.Spec, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForkContinued(t *testing.T) { forEachStore(t, testForkContinued) }

// A fork of a continued run at a message of one of its turns resumes
// with the context length of that turn, which decides where _instance
// opens: its request is the one the turn made after that message, byte
// for byte. Each turn loads an instance with a step of its own, whose
// data comes after the turn's context.
func testForkContinued(t *testing.T, st runStore) {
	ctx := t.Context()
	load := func(id string) string {
		return `{"calls":[{"_tool":"load","id":"` + id + `","_outputPath":"†state.loaded"}],"output":null}`
	}
	const done = `{"calls":[],"output":{"done":true}}`
	cfg := agent.Config{Registry: instancesReg(), Concurrency: 1, Clock: fixed, Store: st, RunID: "chat"}
	turn1 := scripted.Solutions(load("b"), done)
	cfg.Provider = turn1
	res, err := agent.Run(ctx, cfg, anyOut, ctxOf(t, instancesContext))
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := len(ctxOf(t, instancesContext)), res.Log.Len()+3 // the answer and two messages
	turn2 := scripted.Solutions(load("e"), done)
	cfg.RunID, cfg.Provider = "", turn2
	if res, err = agent.Continue(ctx, cfg, "chat", message.Text("again"), message.Text("and more")); err != nil {
		t.Fatal(err)
	}
	if got, want := specTurns(t, st, "chat"), (forkSpec{Context: c2, Turns: []int{c1}}); !cmp.Equal(got, want) {
		t.Errorf("the run's spec: %+v, want %+v", got, want)
	}
	index := func(instance string) int {
		for i, m := range res.Log.All() {
			if m.Instance == instance {
				return i
			}
		}
		t.Fatalf("no data of instance %s", instance)
		return -1
	}

	for _, tt := range []struct {
		name string
		at   int
		want *provider.Request // the request the fork's resume sends first
		spec forkSpec          // the fork's, once resumed
	}{
		{"in the first turn", index("b"), &turn1.Requests()[1], forkSpec{Context: c1}},
		{"in the second turn", index("e"), &turn2.Requests()[1], forkSpec{Context: c2, Turns: []int{c1}}},
		// Cut inside the second turn's context: its context is what the
		// fork has of it.
		{"in the second turn's context", c2 - 2, nil, forkSpec{Context: c2 - 1, Turns: []int{c1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "fork " + tt.name
			if _, err := store.Fork(ctx, st, st, "chat", tt.at, id, fixed()); err != nil {
				t.Fatal(err)
			}
			again := scripted.Solutions(done)
			cfg.Provider = again
			if _, err := agent.Resume(ctx, cfg, id); err != nil {
				t.Fatal(err)
			}
			if tt.want != nil {
				if got, want := sentBytes(again.Requests()[0]), sentBytes(*tt.want); got != want {
					t.Errorf("the fork's request: %s", firstDiff(want, got))
				}
			}
			if got := specTurns(t, st, id); !cmp.Equal(got, tt.spec) {
				t.Errorf("the fork's spec: %+v, want %+v", got, tt.spec)
			}
			// The fork's own next turn keeps the turns it has.
			cfg.Provider = scripted.Solutions(done)
			res, err := agent.Continue(ctx, cfg, id, message.Text("next"))
			if err != nil {
				t.Fatal(err)
			}
			want := forkSpec{Context: res.Log.Len(), Turns: append(tt.spec.Turns, tt.spec.Context)}
			if got := specTurns(t, st, id); !cmp.Equal(got, want) {
				t.Errorf("the fork's spec after its next turn: %+v, want %+v", got, want)
			}
		})
	}
}
