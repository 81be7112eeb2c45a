package message

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

func TestParseSpellings(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"text", `{"type":"text","text":"hi"}`, `{"type":"text","role":"user","text":"hi"}`},
		{"role and string content", `{"role":"assistant","content":"ok"}`, `{"type":"text","role":"assistant","text":"ok"}`},
		{"role and text parts", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, `{"type":"text","role":"user","text":"ab"}`},
		{"role and custom content", `{"role":"user","content":{"type":"input","input":{"a":1}}}`, `{"type":"data","kind":"input","data":{"a":1}}`},
		{"system with message", `{"type":"system","message":"You are a translator."}`, `{"type":"text","role":"system","text":"You are a translator."}`},
		{"data with kind", `{"type":"data","kind":"state","data":{"x":1}}`, `{"type":"data","kind":"state","data":{"x":1}}`},
		{"state under its key", `{"type":"state","state":{"x":1}}`, `{"type":"data","kind":"state","data":{"x":1}}`},
		{"state inline", `{"type":"state","x":1,"_instance":"①"}`, `{"type":"data","kind":"state","_instance":"①","data":{"x":1}}`},
		{"input with data key", `{"type":"input","data":[1,2]}`, `{"type":"data","kind":"input","data":[1,2]}`},
		{"input scalar", `{"type":"input","input":"just text"}`, `{"type":"data","kind":"input","data":"just text"}`},
		{"schema only", `{"type":"state","schema":{"type":"object"}}`, `{"type":"data","kind":"state","schema":{"type":"object"}}`},
		{"tool", `{"type":"tool","tool":{"greetUser":{"type":"object"}}}`, `{"type":"tool","tool":{"greetUser":{"type":"object"}}}`},
		{"tool by name", `{"type":"tool","tool":"Tool.detectLanguage"}`, `{"type":"tool","tool":"Tool.detectLanguage"}`},
		{"plan", `{"type":"plan","plan":[{"_tool":"a"}]}`, `{"type":"plan","plan":[{"_tool":"a"}]}`},
		{"meta", `{"type":"meta","meta":{"version":"1.2.3"}}`, `{"type":"meta","meta":{"version":"1.2.3"}}`},
		{"advisor", `{"type":"advisor","id":"riskAnalyst","on":"request","scopes":["†state.deploymentHistory"],"role":"Analyze risks.","schema":{"type":"object"}}`,
			`{"type":"advisor","id":"riskAnalyst","role":"Analyze risks.","on":"request","scopes":["†state.deploymentHistory"],"schema":{"type":"object"}}`},
		{"registered advisor", `{"type":"advisor","advisor":"riskAnalyst","scopes":["†state.x"],"on":"start"}`,
			`{"type":"advisor","advisor":"riskAnalyst","on":"start","scopes":["†state.x"]}`},
		{"error", `{"type":"error","error":"boom","call":{"_tool":"a"}}`, `{"type":"error","call":{"_tool":"a"},"error":"boom"}`},
		{"custom type keeps its fields", `{"type":"preset","preset":"Council","b":[1, 2]}`, `{"type":"preset","b":[1,2],"preset":"Council"}`},
		{"unknown fields survive", `{"type":"data","kind":"k","data":1,"zeta":true,"_note":"x"}`, `{"type":"data","kind":"k","data":1,"_note":"x","zeta":true}`},
		{"html is not escaped", `{"type":"text","text":"<a & b>"}`, `{"type":"text","role":"user","text":"<a & b>"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
			m2, err := Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if b2, _ := m2.MarshalJSON(); string(b2) != string(b) {
				t.Errorf("not a fixed point: %s", b2)
			}
		})
	}
}

func TestParseContextErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		index    int
		field    string
		text     string
	}{
		{"not an array", `{"type":"text"}`, -1, "", "message: context must be a JSON array of messages, got object"},
		{"not json", `[{"type":`, -1, "", "message: context: line 1, column 9: unexpected end of JSON input"},
		{"message not object", `[{"type":"text","text":"a"}, 3]`, 1, "", "message 1: message: invalid: a message must be a JSON object, got number"},
		{"no type", `[{"text":"a"}]`, 0, "type", `message 0: field "type": message: invalid: missing (and no role)`},
		{"type not string", `[{"type":1}]`, 0, "type", `message 0: field "type": message: invalid: must be a string, got number`},
		{"text missing", `[{"type":"text"}]`, 0, "text", `message 0: field "text": message: invalid: missing`},
		{"bad role", `[{"role":"robot","content":"x"}]`, 0, "role", ""},
		{"bad kind", `[{"type":"data","kind":"a.b","data":1}]`, 0, "kind", ""},
		{"kind disagrees", `[{"type":"state","kind":"input","x":1}]`, 0, "kind", ""},
		{"bad schema", `[{"type":"state","schema":"object"}]`, 0, "schema", `message 0: field "schema": message: invalid: must be object or boolean, got string`},
		{"bad method", `[{"type":"data","kind":"state","data":{"a":1},"_outputPath":"†state.a","_outputMethod":"append"}]`, 0, "_outputMethod", ""},
		{"bad output path", `[{"type":"data","kind":"state","data":{"a":1},"_outputPath":"†state.a || †state.b"}]`, 0, "_outputPath", ""},
		{"output path of another kind", `[{"type":"data","kind":"state","data":{"a":1},"_outputPath":"†input.a"}]`, 0, "_outputPath", ""},
		{"data lacks the path", `[{"type":"text","text":"x"},{"type":"data","kind":"state","data":{"b":1},"_outputPath":"†state.a"}]`, 1, "data", ""},
		{"plan not array", `[{"type":"plan","plan":{}}]`, 0, "plan", ""},
		{"tool missing", `[{"type":"tool"}]`, 0, "tool", ""},
		{"advisor without id", `[{"type":"advisor","role":"x"}]`, 0, "id", ""},
		{"advisor bad on", `[{"type":"advisor","id":"a","on":"never"}]`, 0, "on", ""},
		{"registered advisor with a role", `[{"type":"advisor","advisor":"a","role":"x"}]`, 0, "role", `message 0: field "role": message: invalid: is the registered advisor's: a message naming advisor "a" may set only on and scopes`},
		{"registered advisor with a schema", `[{"type":"advisor","advisor":"a","schema":{}}]`, 0, "schema", ""},
		{"instance not string", `[{"type":"state","_instance":1,"x":1}]`, 0, "_instance", ""},
		{"nested content field", `[{"role":"user","content":{"type":"data","kind":"!"}}]`, 0, "content.kind", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseContext([]byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.text != "" && err.Error() != tt.text {
				t.Errorf("got  %s\nwant %s", err, tt.text)
			}
			if tt.index < 0 {
				return
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("%v is not a *message.Error", err)
			}
			if me.Index != tt.index || me.Field != tt.field {
				t.Errorf("got index %d field %q, want %d %q (%v)", me.Index, me.Field, tt.index, tt.field, err)
			}
		})
	}
}

func TestAppendRejectsMalformedAtomically(t *testing.T) {
	log, _ := NewLog(Text("hi"))
	err := log.Append(Data("state", json.RawMessage(`{"a":1}`)), Message{Type: TypeData, Kind: "no good"})
	var me *Error
	if !errors.As(err, &me) || me.Index != 2 || me.Field != "kind" {
		t.Fatalf("got %v, want error at message 2 field kind", err)
	}
	if log.Len() != 1 {
		t.Errorf("log has %d messages after a failed append, want 1", log.Len())
	}
}

func TestCheck(t *testing.T) {
	log, _ := NewLog(Data("state", json.RawMessage(`{"title":"Report","log":[]}`)))
	date := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	push := func(path string) Message {
		ms, err := Outputs(json.RawMessage(`{"_tool":"t","_outputMethod":"push","_outputPath":"`+path+`"}`), json.RawMessage(`1`), Success, date)
		if err != nil {
			t.Fatal(err)
		}
		return ms[0]
	}
	if err := log.Check(push("†state.log")); err != nil {
		t.Errorf("push onto array: %v", err)
	}
	if err := log.Check(push("†state.title")); !errors.Is(err, ref.ErrTypeClash) {
		t.Errorf("push onto string: got %v, want a type clash", err)
	}
	if err := log.Check(push("†other.x")); err != nil {
		t.Errorf("push onto a new kind: %v", err)
	}
}

// TestLogConcurrent appends and reads from many goroutines; run with -race.
func TestLogConcurrent(t *testing.T) {
	log := &Log{}
	date := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				call := json.RawMessage(`{"_tool":"t","_outputMethod":"push","_outputPath":"†state.n` + string(rune('0'+w)) + `"}`)
				ms, err := Outputs(call, json.RawMessage(`{"i":1}`), Success, date)
				if err != nil {
					t.Error(err)
					return
				}
				if err := log.Append(ms...); err != nil {
					t.Error(err)
					return
				}
				if _, err := log.Lookup("state", ref.Path{"n" + string(rune('0'+w))}); err != nil {
					t.Error(err)
				}
				_ = i
			}
		})
		wg.Go(func() {
			for range 200 {
				for range log.All() {
				}
				_, _, _ = log.Value(Identity{Kind: "state"})
			}
		})
	}
	wg.Wait()
	for w := range 4 {
		v, err := log.Lookup("state", ref.Path{"n" + string(rune('0'+w))})
		if err != nil {
			t.Fatal(err)
		}
		var arr []any
		if err := json.Unmarshal(v, &arr); err != nil || len(arr) != 200 {
			t.Errorf("writer %d: %d values, want 200 (%v)", w, len(arr), err)
		}
	}
}

// TestOutputRetargeted checks that an output message whose _outputPath
// was changed after Outputs made it writes where it now says.
func TestOutputRetargeted(t *testing.T) {
	ms, err := Outputs(json.RawMessage(`{"_tool":"t","_outputPath":"†state.a"}`), json.RawMessage(`{"v":1}`), Success, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	m.OutputPath = "†other.a"
	if _, err := NewLog(m); err == nil || !strings.Contains(err.Error(), `writes kind "other"`) {
		t.Errorf("got %v, want a kind mismatch", err)
	}
}
