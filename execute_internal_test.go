package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/augceo/agent/message"
)

// TestPrepareChecked checks the one-pass preparation of streamed calls
// against the step-by-step one: where it prepares a call, the call is
// the same; where a call needs more (references, scopes, escapes, a tool
// not named first, an unknown tool, bad parameters or meta-properties),
// it leaves the call to the step-by-step way.
func TestPrepareChecked(t *testing.T) {
	reg := NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"a":{"type":"object"}},"required":["x"]}`))
	reg.Tool("s", json.RawMessage(`{"type":"object","properties":{"_scopes":{"const":["state"]}}}`))
	log, err := message.NewLog(
		message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)},
		message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"s"`)},
		message.Data("state", json.RawMessage(`{"n":1}`)),
		message.Text("go"),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := prepareFrom(context.Background(), Config{Registry: reg}, json.RawMessage(`{"type":"object"}`), log, false, true)
	if err != nil {
		t.Fatal(err)
	}
	x := &executor{cfg: &Config{}, reg: reg, build: p.build}
	for _, tt := range []struct {
		raw  string
		fast bool
	}{
		{`{"_tool":"t","x":1,"_outputPath":"†state.r"}`, true},
		{`{"_tool":"t","x":1}`, true},
		{`{"_tool":"t","x":1,"_instance":"i1","_outputPath":"†state.r","_outputMethod":"merge","_other":5}`, true},
		{`{"_tool":"t","x":1,"_outputPath":"†state.r || †state.e"}`, true}, // two targets: the path parsed whole
		{`{"_tool":"t","x":1,"_instance":"†state.n"}`, false},              // a dagger in another meta-property
		{`{"_tool":"t","x":1,"_note":"†state.n"}`, false},                  // in one of no meaning
		{`{"_tool":"t","x":1,"_note":"a\nb"}`, false},                      // an escape there
		{`{"_tool":"t","x":1,"a":{"k":"a\nb"}}`, false},                    // an escape in a parameter
		{`{"_tool":"t","x":1,"†k":1}`, false},                              // a dagger in a key
		{`{"_tool":"t","x":1,"a":{"b":"c"},"_outputPath":"†state.a.b.c.d.e"}`, true},
		{`{"_tool":"t","x":"†state.n","_outputPath":"†state.r"}`, false},               // a reference
		{`{"_tool":"t","x":1,"a":{"_outputPath":"†state.n"}}`, false},                  // a dagger in a parameter
		{`{"_tool":"t","x":1,"a":{"k":"\u2020state.n"}}`, false},                       // an escaped one
		{`{"_tool":"t","x":1,"_outputPath":"\u2020state.r"}`, false},                   // an escape
		{`{"x":1,"_tool":"t"}`, false},                                                 // the tool not first
		{`{"_tool" : "t","x":1}`, false},                                               // spaced
		{`{"_tool":"u","x":1}`, false},                                                 // unknown
		{`{"_tool":"t","x":"1"}`, false},                                               // bad parameters
		{`{"_tool":"t"}`, false},                                                       // one missing
		{`{"_tool":"t","x":1,"_outputPath":5}`, false},                                 // not a string
		{`{"_tool":"t","x":1,"_outputPath":"state"}`, false},                           // not a reference
		{`{"_tool":"t","x":1,"_outputMethod":"nope","_outputPath":"†state.r"}`, false}, // no such method
		{`{"_tool":"t","x":1,"_scopes":["state"]}`, false},                             // scoped
		{`{"_tool":"s"}`, false},                                                       // a scoped tool
		{`{"_tool":"t","x":1,"_tool":"s"}`, false},                                     // named twice
	} {
		raw := json.RawMessage(tt.raw)
		fast := x.prepareChecked(raw)
		slow, serr := x.prepareRaw(log, raw, false)
		if (fast != nil) != tt.fast {
			t.Errorf("%s: prepared in one pass: %v, want %v", tt.raw, fast != nil, tt.fast)
		}
		if fast == nil {
			continue
		}
		if serr != nil {
			t.Errorf("%s: prepared in one pass, but step by step: %v", tt.raw, serr)
			continue
		}
		if fast.Tool != slow.Tool || fast.Instance != slow.Instance || fast.OutputPath != slow.OutputPath ||
			fast.OutputMethod != slow.OutputMethod || string(fast.Params) != string(slow.Params) || fast.noRefs != slow.noRefs ||
			string(fast.Schema) != string(slow.Schema) || fast.shape != slow.shape || !fast.paramsValid() ||
			fast.output.Path.Text != slow.output.Path.Text || fast.output.Method != slow.output.Method {
			t.Errorf("%s: one pass gives %+v, step by step %+v", tt.raw, *fast, *slow)
		}
	}
}
