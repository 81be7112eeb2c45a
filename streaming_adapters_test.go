package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
)

// TestOutputStreamsThroughAdapters runs a loop whose answer is a long
// string through each real adapter: the output arrives in pieces, before
// the run ends, whose text joins into the answer.
func TestOutputStreamsThroughAdapters(t *testing.T) {
	want := strings.Repeat(`The "answer" is 42 — café, naïve, 😀. `, 8)
	solution, _ := json.Marshal(map[string]any{"output": want})
	for _, a := range strictAdapters {
		t.Run(a.name, func(t *testing.T) {
			p, srv := a.start(t, func(*strict.Request, int) (string, error) { return string(solution), nil })
			var text strings.Builder
			pieces, done := 0, false
			for ev, err := range agent.Events(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"Answer."}]`)) {
				if err != nil {
					t.Fatal(err)
				}
				switch ev.Kind {
				case agent.EventOutput:
					if done {
						t.Fatal("output after done")
					}
					pieces++
					text.WriteString(ev.Output.Text)
				case agent.EventDone:
					done = true
				}
			}
			if text.String() != want {
				t.Errorf("streamed %q", text.String())
			}
			if pieces < 2 {
				t.Errorf("%d pieces: the answer did not stream", pieces)
			}
			if len(srv.Rejected()) > 0 {
				t.Errorf("rejected: %v", srv.Rejected())
			}
		})
	}
}
