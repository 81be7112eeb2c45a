package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// TestOutputTapPieces feeds solutions in chunks of every size: the JSON
// pieces join into the output as written, and for a string output the
// Text pieces join into the decoded string, escapes, surrogate pairs and
// multi-byte characters included, whatever the chunk boundaries.
func TestOutputTapPieces(t *testing.T) {
	for _, doc := range []string{
		`{"calls":[],"output":"plain"}`,
		`{"output":"tab\there \"quoted\" \\ é ü \u00e9\ud83d\ude00 😀 end"}`,
		`{"output":"lone \ud800 surrogate"}`,
		`{"output":{"answer":"x","items":[1,2]},"meta":{}}`,
		`{"output":[1,"two"]}`,
		`{"output":-12.5e2}`,
		`{"output":""}`,
	} {
		var whole struct{ Output json.RawMessage }
		if err := json.Unmarshal([]byte(doc), &whole); err != nil {
			t.Fatal(err)
		}
		var wantText string
		isString := json.Unmarshal(whole.Output, &wantText) == nil
		for size := 1; size <= len(doc); size++ {
			tap := newOutputTap()
			var js, text strings.Builder
			for i := 0; i < len(doc); i += size {
				if o := tap.feed(0, []byte(doc[i:min(i+size, len(doc))])); o != nil {
					js.WriteString(o.JSON)
					text.WriteString(o.Text)
				}
			}
			if js.String() != string(whole.Output) {
				t.Fatalf("%s in chunks of %d: JSON pieces join to %q", doc, size, js.String())
			}
			if isString && text.String() != wantText {
				t.Fatalf("%s in chunks of %d: Text pieces join to %q, want %q", doc, size, text.String(), wantText)
			}
			if !isString && text.Len() > 0 {
				t.Fatalf("%s: Text %q for an output that is not a string", doc, text.String())
			}
		}
	}
}

// TestOutputTapNull checks that a null output, a loop step not done,
// yields no piece, nor does an answer that is not JSON.
func TestOutputTapNull(t *testing.T) {
	for _, doc := range []string{`{"calls":[{"_tool":"a"}],"output":null}`, `not json at all`, `{"calls":[]}`} {
		tap := newOutputTap()
		for i := range len(doc) {
			if o := tap.feed(0, []byte{doc[i]}); o != nil {
				t.Fatalf("%s: piece %+v", doc, o)
			}
		}
	}
}

// TestEventsStreamOutput runs a loop whose answer streams in small
// chunks: the step that calls a tool yields no output piece, the last
// yields pieces, before the done event, that join into the answer.
func TestEventsStreamOutput(t *testing.T) {
	reg := NewRegistry()
	reg.Tool("lookup", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`))
	reg.Activity("lookup", ActivityFunc(func(ctx context.Context, c *Call) (*Result, error) {
		return &Result{Value: json.RawMessage(`"found"`)}, nil
	}))
	answer := `{"calls":[],"output":"The answer is \"42\", café."}`
	var chunks []string
	for i := 0; i < len(answer); i += 5 {
		chunks = append(chunks, answer[i:min(i+5, len(answer))])
	}
	p := scripted.New(
		scripted.Response{Chunks: []string{`{"calls":[{"_tool":"lookup","q":"x"}],`, `"output":null}`}},
		scripted.Response{Chunks: chunks},
	)
	cfg := Config{Provider: p, Registry: reg}
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"lookup"`)}}
	var text strings.Builder
	pieces, done := 0, false
	for ev, err := range Events(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), msgs) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case EventOutput:
			if done {
				t.Fatal("an output piece after done")
			}
			if ev.Step != 2 {
				t.Fatalf("output piece in step %d", ev.Step)
			}
			pieces++
			text.WriteString(ev.Output.Text)
		case EventDone:
			done = true
		}
	}
	if want := `The answer is "42", café.`; text.String() != want {
		t.Fatalf("streamed %q, want %q", text.String(), want)
	}
	if pieces < 5 {
		t.Fatalf("%d pieces: the answer did not stream", pieces)
	}
}

// TestStreamOutputRepair checks that a Repair event comes between the
// pieces of an invalid answer and those of the answer re-asked.
func TestStreamOutputRepair(t *testing.T) {
	p := scripted.New(
		scripted.Response{Chunks: []string{`{"output":`, `"toolong"}`}},
		scripted.Response{Chunks: []string{`{"output":`, `"ok"}`}},
	)
	var got []string
	for ev, err := range Stream(context.Background(), Config{Provider: p}, json.RawMessage(`{"type":"string","maxLength":3}`), nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Output != nil:
			got = append(got, ev.Output.Text)
		case ev.Repair != nil:
			got = append(got, "|repair|")
		}
	}
	if strings.Join(got, "") != "toolong|repair|ok" {
		t.Fatalf("events %q", got)
	}
}
