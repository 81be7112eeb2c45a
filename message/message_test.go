package message_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/message"
)

// The constructors build the canonical form of the messages the protocol
// spells in JSON, and the log takes them as they are.
func TestConstructors(t *testing.T) {
	type order struct {
		ID    string   `json:"id"`
		Items []string `json:"items"`
		Note  string   `json:"note,omitempty"`
	}
	input := func(v any) message.Message {
		m, err := message.Input(v)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tt := range []struct {
		name string
		m    message.Message
		json string // canonical form
		from string // as a user would write it
	}{
		{"text", message.Text("Hi"), `{"type":"text","role":"user","text":"Hi"}`, `{"role":"user","content":"Hi"}`},
		{"assistant", message.Assistant("Hello."), `{"type":"text","role":"assistant","text":"Hello."}`, `{"role":"assistant","content":"Hello."}`},
		{"system", message.System("Be brief."), `{"type":"text","role":"system","text":"Be brief."}`, `{"type":"system","message":"Be brief."}`},
		{"tool", message.Tool("weather"), `{"type":"tool","tool":"weather"}`, `{"type":"tool","tool":"weather"}`},
		{"tool name to escape", message.Tool(`a"<b>`), `{"type":"tool","tool":"a\"<b>"}`, `{"type":"tool","tool":"a\"<b>"}`},
		{"input", input(order{ID: "A<1>", Items: []string{"tea"}}), `{"type":"data","kind":"input","data":{"id":"A<1>","items":["tea"]}}`,
			`{"type":"input","id":"A<1>","items":["tea"]}`},
		{"input map", input(map[string]int{"b": 2, "a": 1}), `{"type":"data","kind":"input","data":{"a":1,"b":2}}`, `{"type":"input","input":{"a":1,"b":2}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.m.MarshalJSON() // json.Marshal would escape HTML
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.json {
				t.Errorf("got %s\nwant %s", got, tt.json)
			}
			parsed, err := message.Parse([]byte(tt.from))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.m, parsed); diff != "" {
				t.Errorf("(-constructed +parsed from %s):\n%s", tt.from, diff)
			}
			if _, err := message.NewLog(tt.m); err != nil {
				t.Errorf("NewLog: %v", err)
			}
		})
	}
	if _, err := message.Input(func() {}); err == nil || err.Error() != "message: input: json: unsupported type: func()" {
		t.Errorf("Input(func) error %v", err)
	}
}
