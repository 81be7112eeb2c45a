package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// TestQuietRunsKeepTheirLogs runs quiet runs of bound functions one after
// another, each with its own inputs: the calls and results a run reuses
// from the one before must leave every earlier run's log as it was.
func TestQuietRunsKeepTheirLogs(t *testing.T) {
	reg, msgs := tenTools()
	calls := func(run int) string {
		s := `{"calls":[`
		for i := range 10 {
			if i > 0 {
				s += ","
			}
			path := fmt.Sprintf(`†state.r%d_%d`, run, i)
			if i >= 8 { // nested: a view keeps such writes as they are, paths and all
				path = fmt.Sprintf(`†notes.r%d.v%d`, run, i)
			}
			s += fmt.Sprintf(`{"_tool":"t%d","x":%d,"_outputPath":"%s"}`, i, 100*run+i, path)
		}
		return s + `],"output":null}`
	}
	var logs []*message.Log
	for run := range 20 {
		p := scripted.Solutions(calls(run), `{"calls":[],"output":{"done":true}}`)
		res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, res.Log)
	}
	for run, l := range logs {
		v, ok, err := l.Value(message.Identity{Kind: "state"})
		if err != nil || !ok {
			t.Fatalf("run %d: state: %v %v", run, ok, err)
		}
		want := "{"
		for i := range 8 {
			if i > 0 {
				want += ","
			}
			want += fmt.Sprintf(`"r%d_%d":{"y":%d}`, run, i, 100*run+i+1)
		}
		if want += "}"; !jsonEqual(v, json.RawMessage(want)) {
			t.Errorf("run %d: state %s, want %s", run, v, want)
		}
		notes, _, err := l.Value(message.Identity{Kind: "notes"})
		if want := fmt.Sprintf(`{"r%d":{"v8":{"y":%d},"v9":{"y":%d}}}`, run, 100*run+9, 100*run+10); err != nil || !jsonEqual(notes, json.RawMessage(want)) {
			t.Errorf("run %d: notes %s (%v), want %s", run, notes, err, want)
		}
		// Each output message, as the log gives it back, still holds its
		// own path and value.
		for _, m := range l.Messages() {
			if m.Type != message.TypeData || m.Kind != "state" {
				continue
			}
			var i, x int
			if _, err := fmt.Sscanf(m.OutputPath, "†state.r%d_%d", &x, &i); err != nil || x != run {
				t.Errorf("run %d: output path %q", run, m.OutputPath)
			}
			if want := fmt.Sprintf(`{"r%d_%d":{"y":%d}}`, run, i, 100*run+i+1); string(m.Data) != want {
				t.Errorf("run %d: output %s, want %s", run, m.Data, want)
			}
		}
	}
}

// TestQuietRunsLeaveHeldCallsAlone checks that a Call handed to user code,
// by an activity, a Confirm hook or the event stream, is never reused by a
// later run.
func TestQuietRunsLeaveHeldCallsAlone(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)
	answer := func(run int) string {
		return fmt.Sprintf(`{"calls":[{"_tool":"t","x":%d,"_outputPath":"†state.a"},{"_tool":"t","x":%d,"_outputPath":"†state.b"}],"output":null}`, run, run)
	}
	type held struct {
		c   *agent.Call
		raw string
		run int
	}
	for _, by := range []string{"activity", "confirm", "events"} {
		t.Run(by, func(t *testing.T) {
			var mu sync.Mutex
			var kept []held
			run := 0
			keep := func(c *agent.Call) {
				mu.Lock()
				kept = append(kept, held{c, string(c.Raw), run})
				mu.Unlock()
			}
			reg := agent.NewRegistry()
			reg.Tool("t", schema)
			if by == "activity" {
				reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
					keep(c)
					return &agent.Result{Value: json.RawMessage(`1`)}, nil
				}))
			} else {
				reg.Activity("t", agent.Bind(func(ctx context.Context, p struct {
					X int `json:"x"`
				}) (int, error) {
					return p.X, nil
				}))
			}
			msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}, message.Text("go")}
			for run = range 10 {
				cfg := agent.Config{Provider: scripted.Solutions(answer(run), `{"calls":[],"output":{}}`), Registry: reg}
				if by == "confirm" {
					cfg.Confirm = func(ctx context.Context, c *agent.Call) (agent.Decision, error) {
						keep(c)
						return agent.Decision{}, nil
					}
				}
				if by == "events" {
					for ev, err := range agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs) {
						if err != nil {
							t.Fatal(err)
						}
						if ev.Kind == agent.EventCallStarted {
							keep(ev.Call)
						}
					}
					continue
				}
				if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
					t.Fatal(err)
				}
			}
			if len(kept) != 20 {
				t.Fatalf("%d calls held, want 20", len(kept))
			}
			for _, h := range kept {
				if string(h.c.Raw) != h.raw || h.c.Tool != "t" || h.c.ID == "" {
					t.Errorf("a call held from run %d changed: raw %s (was %s), tool %q, id %q", h.run, h.c.Raw, h.raw, h.c.Tool, h.c.ID)
				}
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
