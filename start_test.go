package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// startRegistry has a code tool, a latent one and a tool whose activity
// appends a tool and described data.
func startRegistry() *agent.Registry {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`{"y":1}`)}, nil
	}))
	reg.Tool("lat", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"string"}}}`))
	reg.Tool("w", json.RawMessage(`{"type":"object","properties":{"z":{"type":"string"}}}`))
	reg.Tool("more", json.RawMessage(`{"type":"object","properties":{}}`))
	reg.Activity("more", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{
			{Type: message.TypeTool, Tool: json.RawMessage(`"w"`)},
			{Type: message.TypeData, Kind: "state", Data: json.RawMessage(`{"b":true}`), Description: "What was done."},
		}}, nil
	}))
	return reg
}

var startAnswers = []string{
	`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"},{"_tool":"more","_outputPath":"†state.m"}],"output":null}`,
	`{"calls":[{"_tool":"w","z":"z","_output":{"ok":true},"_outputPath":"†notes.w"}],"output":null}`,
	`{"calls":[],"output":{"done":true}}`,
}

var startOut = json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)

// runRequests runs a loop and returns every request it sent, as JSON, and
// its log.
func runRequests(t *testing.T, cfg agent.Config, msgs []message.Message) ([]string, []message.Message) {
	t.Helper()
	p := scripted.Solutions(startAnswers...)
	cfg.Provider, cfg.Clock, cfg.Concurrency = p, fixed, 1
	res, err := agent.Run(context.Background(), cfg, startOut, msgs)
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

func sameRequests(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d requests, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: request %d:\n%s\nwant\n%s", what, i+1, got[i], want[i])
		}
	}
}

// TestRunStartsFromCachedContext checks that a loop whose context starts
// like an earlier one's sends exactly the requests a registry that never
// saw that context would.
func TestRunStartsFromCachedContext(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"system","text":"Be brief."},{"type":"tool","tool":"t"},{"type":"tool","tool":"lat"},
		{"type":"tool","tool":"more"},{"type":"data","kind":"state","data":{"start":1},"description":"The run's state."},
		{"type":"text","text":"go"}]`)
	reg := startRegistry()
	first, log := runRequests(t, agent.Config{Registry: reg}, msgs)
	again, _ := runRequests(t, agent.Config{Registry: reg}, msgs)
	sameRequests(t, "the same context again", again, first)
	fresh, _ := runRequests(t, agent.Config{Registry: startRegistry()}, msgs)
	sameRequests(t, "a fresh registry", first, fresh)

	// A chat's next turn: the last run's log and a new message.
	next := append(log, message.Text("and again"))
	got, _ := runRequests(t, agent.Config{Registry: reg}, next)
	want, _ := runRequests(t, agent.Config{Registry: startRegistry()}, next)
	sameRequests(t, "the next turn", got, want)

	// Other questions to the same agent: the head (up to the last tool)
	// is shared, the rest differs.
	for _, q := range []string{"something else", "and a third thing"} {
		ask := append(append([]message.Message(nil), msgs[:4]...), message.Text(q))
		got, _ = runRequests(t, agent.Config{Registry: reg}, ask)
		want, _ = runRequests(t, agent.Config{Registry: startRegistry()}, ask)
		sameRequests(t, "another question", got, want)
	}

	// A context that differs early shares nothing.
	other := append([]message.Message{message.Text("First this.")}, msgs...)
	got, _ = runRequests(t, agent.Config{Registry: reg}, other)
	want, _ = runRequests(t, agent.Config{Registry: startRegistry()}, other)
	sameRequests(t, "another context", got, want)

	// Other settings make other requests.
	got, _ = runRequests(t, agent.Config{Registry: reg, Model: "m2", MaxTokens: 7}, msgs)
	want, _ = runRequests(t, agent.Config{Registry: startRegistry(), Model: "m2", MaxTokens: 7}, msgs)
	sameRequests(t, "other settings", got, want)
	if !strings.Contains(got[0], `"Model":"m2"`) {
		t.Errorf("the model setting is lost: %s", got[0])
	}
	got, _ = runRequests(t, agent.Config{Registry: reg}, msgs)
	sameRequests(t, "the first settings again", got, first)
}

// TestRunStartCacheSeesRegistrations checks that registering after a
// context was cached changes what the next loop over it sends: here an
// activity makes the latent tool explicit, so the model no longer writes
// its _output.
func TestRunStartCacheSeesRegistrations(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"tool","tool":"lat"},{"type":"tool","tool":"more"},{"type":"text","text":"go"}]`)
	reg := startRegistry()
	before, _ := runRequests(t, agent.Config{Registry: reg}, msgs)
	if !strings.Contains(before[0], `"_output":{"type":"string"}`) {
		t.Fatalf("the latent tool has no _output for the model: %s", before[0])
	}
	lat := agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`"q"`)}, nil
	})
	reg.Activity("lat", lat)
	after, _ := runRequests(t, agent.Config{Registry: reg}, msgs)
	fresh := startRegistry()
	fresh.Activity("lat", lat)
	want, _ := runRequests(t, agent.Config{Registry: fresh}, msgs)
	sameRequests(t, "after the registration", after, want)
	if after[0] == before[0] {
		t.Error("the cached request was sent after the registry changed")
	}
}

// TestRunStartCacheConcurrent runs loops over a few contexts at once on
// one registry: each sends what it would alone.
func TestRunStartCacheConcurrent(t *testing.T) {
	reg := startRegistry()
	var contexts [][]message.Message
	var wants [][]string
	for i := range 3 {
		msgs := ctxOf(t, fmt.Sprintf(`[{"type":"system","text":"Be brief."},{"type":"tool","tool":"t"},{"type":"tool","tool":"more"},
			{"type":"data","kind":"input","data":{"start":%d}},{"type":"text","text":"go %d"}]`, i, i))
		want, _ := runRequests(t, agent.Config{Registry: startRegistry()}, msgs)
		contexts, wants = append(contexts, msgs), append(wants, want)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 10 {
				i := (g + k) % len(contexts)
				got, _ := runRequests(t, agent.Config{Registry: reg}, contexts[i])
				sameRequests(t, fmt.Sprintf("context %d", i), got, wants[i])
			}
		})
	}
	wg.Wait()
}

// TestRunStartHeadSeesOnlyItsData runs a context whose data continues
// past its last tool, then one that shares the head but not that data:
// the second must not see the first's data in its rendered blocks.
func TestRunStartHeadSeesOnlyItsData(t *testing.T) {
	a := ctxOf(t, `[{"type":"data","kind":"state","data":{"start":1}},{"type":"tool","tool":"t"},
		{"type":"data","kind":"state","data":{"more":2}},{"type":"text","text":"a?"}]`)
	b := ctxOf(t, `[{"type":"data","kind":"state","data":{"start":1}},{"type":"tool","tool":"t"},{"type":"text","text":"b?"}]`)
	reg := startRegistry()
	runRequests(t, agent.Config{Registry: reg}, a)
	got, _ := runRequests(t, agent.Config{Registry: reg}, b)
	want, _ := runRequests(t, agent.Config{Registry: startRegistry()}, b)
	sameRequests(t, "the second context", got, want)
	if strings.Contains(got[0], `more`) {
		t.Errorf("the second context sees the first one's data: %s", got[0])
	}
}
