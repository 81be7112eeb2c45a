package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store/sqlite"
)

// TestLogNeverStarted: a run stopped while a call waited for data
// another call was to write; acts log shows the waiting call, which has
// no start of its own.
func TestLogNeverStarted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("put", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return agent.Value("put") }))
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		cancel() // Ctrl-C while slow runs
		<-c.Done()
		return nil, c.Err()
	}))
	offer, err := reg.Offer()
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Registry: reg, Store: st, RunID: "w", Provider: scripted.Solutions(
		`{"calls":[{"_tool":"put","v":"†state.s","_outputPath":"†state.x"},{"_tool":"slow","_outputPath":"†state.s"}],"output":null}`)}
	_, err = agent.Run(ctx, cfg, json.RawMessage(`{}`), []message.Message{offer, message.Text("go")})
	st.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	code, out, errOut := acts(context.Background(), reg, "log", "w", "--store", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "call 1.1 started: slow") || !strings.Contains(out, `call 1.0 never started: put {"_tool":"put","v":"†state.s"`) ||
		!strings.Contains(out, "1 call started") {
		t.Errorf("log:\n%s", out)
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 calls"}, {1, "1 call"}, {2, "2 calls"}} {
		if got := count(tt.n, "call"); got != tt.want {
			t.Errorf("count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
