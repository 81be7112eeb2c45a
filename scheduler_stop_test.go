package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// A durable run whose consumer stops at the second call.started event of
// a round (two calls start together) returns: the calls counted as
// running and never launched are not waited for.
func TestBreakAtSecondStartReturns(t *testing.T) {
	reg := echoReg()
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "h", Clock: fixed, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"put","v":1,"_outputPath":"†state.a"},{"_tool":"put","v":2,"_outputPath":"†state.b"}],"output":null}`)}
	stopAtSecondStart(t, "the run", agent.Events(context.Background(), cfg, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)))
}

// stopAtSecondStart reads events up to the second call.started and stops:
// the stream must return (a hang detector, not a speed target).
func stopAtSecondStart(t *testing.T, what string, events iter.Seq2[agent.RunEvent, error]) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for ev, err := range events {
			if err != nil {
				return
			}
			if ev.Kind == agent.EventCallStarted {
				if n++; n == 2 {
					break
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return after its consumer stopped", what)
	}
}

// The same through Resume, which finishes the cut step's calls in one
// round: a ResumeEvents consumer that stops at the second call.started
// gets control back (and the run's lease is given up).
func TestResumeBreakAtSecondStartReturns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := echoReg()
	reg.Tool("slow", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("slow", agent.Idempotent(agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
		if ctx.Err() == nil {
			if call.ID == "1.0" {
				time.Sleep(10 * time.Millisecond) // both started
				return interrupt(c, cancel)
			}
			<-c.Done()
			return nil, c.Err()
		}
		return agent.Value("slow")
	})))
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Store: st, RunID: "h", Clock: fixed, Provider: scripted.Solutions(
		`{"calls":[{"_tool":"slow","v":1,"_outputPath":"†state.s"},{"_tool":"slow","v":2,"_outputPath":"†state.t"}],"output":null}`)}
	if _, err := agent.Run(ctx, cfg, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut: %v", err)
	}
	cfg.Provider = scripted.Solutions(`{"calls":[],"output":{"done":true}}`)
	stopAtSecondStart(t, "the resume", agent.ResumeEvents(context.Background(), cfg, "h"))
}
