package agent_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
)

func TestIdeaMCPRoundTrip(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object"},"context":[],"mcp":[
		{"name":"fs","command":["mcp-server-filesystem","."],"env":["LOG=debug"],"prefix":"fs_"},
		{"url":"https://example.com/mcp"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.MCPServer{
		{Name: "fs", Command: []string{"mcp-server-filesystem", "."}, Env: []string{"LOG=debug"}, Prefix: "fs_"},
		{URL: "https://example.com/mcp"},
	}
	if diff := cmp.Diff(want, idea.MCP); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
	b, err := idea.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := agent.ParseIdea(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if diff := cmp.Diff(want, back.MCP); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\n%s", diff, b)
	}
	if strings.Contains(string(b), `"url": ""`) || !strings.Contains(string(b), `"mcp": [`) {
		t.Errorf("marshalled:\n%s", b)
	}
	b, err = (&agent.Idea{Schema: []byte(`{}`)}).Marshal()
	if err != nil || strings.Contains(string(b), "mcp") {
		t.Errorf("an Idea without servers has no mcp field: %s, %v", b, err)
	}
}

func TestIdeaMCPErrors(t *testing.T) {
	for _, tt := range []struct{ servers, want string }{
		{`[{"name":"x","command":["a"],"url":"http://b"}]`, `agent: idea: mcp[0]: both command and url are set; give one`},
		{`[{"url":"http://a"},{"name":"y"}]`, `agent: idea: mcp[1]: give a command or a url`},
		{`[{"url":"http://a","env":["TOKEN=x"]}]`, `agent: idea: mcp[0]: env is set for a url server; it is for a command`},
		{`[{"command":[""]}]`, `agent: idea: mcp[0]: the command's program is empty`},
		{`[{"command":["a"],"env":["NOVALUE"]}]`, `agent: idea: mcp[0]: env entry "NOVALUE" is not KEY=VALUE`},
		{`[{"command":["a"],"prefix":"_git"}]`, `agent: idea: mcp[0]: prefix "_git" starts with "_", which marks a meta-property: no tool could take its name`},
		{`[{"command":["a"],"prefix":"Tool.git_"}]`, `agent: idea: mcp[0]: prefix "Tool.git_" starts with "Tool.", which names the tool after it: no tool could take its name`},
		{`{"command":["a"]}`, `agent: idea: field "mcp": unexpected JSON object`},
		{`[{"command":"a b"}]`, `agent: idea: field "mcp.command": unexpected JSON string`},
	} {
		_, err := agent.ParseIdea([]byte(`{"schema":{},"context":[],"mcp":` + tt.servers + `}`))
		if err == nil || err.Error() != tt.want {
			t.Errorf("mcp %s: got %v, want %q", tt.servers, err, tt.want)
		}
	}
	idea := &agent.Idea{Schema: []byte(`{}`), MCP: []agent.MCPServer{{Name: "x"}}}
	if _, err := idea.Marshal(); err == nil || err.Error() != `agent: idea: mcp[0]: give a command or a url` {
		t.Errorf("Marshal: got %v", err)
	}
}
