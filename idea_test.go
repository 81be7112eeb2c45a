package agent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
)

func TestParseIdea(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object"},"context":[{"type":"input","city":"Paris"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(idea.Context) != 1 || idea.Context[0].Kind != "input" {
		t.Errorf("context %+v", idea.Context)
	}
	for in, want := range map[string]string{
		`[]`:             "must be a JSON object",
		`{"context":[]}`: `field "schema" is missing`,
		`{"schema":{},"context":[{"type":"data","kind":"!"}]}`: "message 0",
		`{"schema":{}`: "unexpected end",
	} {
		_, err := agent.ParseIdea([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseIdea(%s) = %v, want %q", in, err, want)
		}
	}
	_, err = agent.ParseIdea([]byte(`{"schema":{},"context":[{"type":"data","kind":"!"}]}`))
	var me *message.Error
	if !errors.As(err, &me) || me.Index != 0 || me.Field != "kind" {
		t.Errorf("got %v, want a *message.Error at message 0", err)
	}
}
