package message_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/message"
)

func TestOfferedTools(t *testing.T) {
	for _, tt := range []struct {
		name, msg string
		want      []message.OfferedTool
	}{
		{"a registered tool", `{"type":"tool","tool":"search"}`, []message.OfferedTool{{Name: "search"}}},
		{"Tool. prefix", `{"type":"tool","tool":"Tool.search"}`, []message.OfferedTool{{Name: "search"}}},
		{"one definition", `{"type":"tool","tool":{"type":"object","properties":{"_tool":{"const":"add"},"a":{"type":"integer"}}}}`,
			[]message.OfferedTool{{Name: "add", Def: json.RawMessage(`{"type":"object","properties":{"_tool":{"const":"add"},"a":{"type":"integer"}}}`)}}},
		{"a map, in order", `{"type":"tool","tool":{"zeta":{"type":"object"},"alpha":{"type":"object","description":"first"}}}`,
			[]message.OfferedTool{{Name: "zeta", Def: json.RawMessage(`{"type":"object"}`)}, {Name: "alpha", Def: json.RawMessage(`{"type":"object","description":"first"}`)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m message.Message
			if err := json.Unmarshal([]byte(tt.msg), &m); err != nil {
				t.Fatal(err)
			}
			got, err := m.OfferedTools()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	text := message.Message{Type: message.TypeText, Text: "hi"}
	if _, err := text.OfferedTools(); err == nil {
		t.Error("a text message offers tools")
	}
	if _, err := (&message.Message{Type: message.TypeTool, Tool: json.RawMessage(`[1]`)}).OfferedTools(); err == nil {
		t.Error("an array offers tools")
	}
}
