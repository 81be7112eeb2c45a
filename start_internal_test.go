package agent

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// TestBuildForkIsolates checks that forks of one Build and the Build
// itself never see each other's writes: appends, tools and properties
// replaced in place, and map entries.
func TestBuildForkIsolates(t *testing.T) {
	reg := NewRegistry()
	b := &Build{Registry: reg, LLM: &provider.Request{Model: "m"}, carry: true}
	for _, r := range []string{"one", "two", "three"} { // len 3, cap 4: an append in place would be shared
		b.Render(provider.RoleUser, r)
	}
	b.DefineTool("t", json.RawMessage(`{"v":1}`))
	b.DefineTool("u", json.RawMessage(`{"v":1}`))
	b.Property("p", json.RawMessage(`{"v":1}`), true)
	b.setShape("t", &shaped{def: json.RawMessage("1")})
	b.rendered = map[message.Identity]bool{{Kind: "state"}: true}
	b.blocks = map[message.Identity]block{{Kind: "state"}: {msg: 1}}
	if cap(b.messages) == len(b.messages) {
		t.Fatal("the test needs room past the rendered messages")
	}

	f, g, h := b.fork(nil), b.fork(nil), b.fork(nil)
	h.setShape("t", &shaped{def: json.RawMessage("3")}) // in place, and nothing else
	f.Render(provider.RoleUser, "f")
	g.Render(provider.RoleUser, "g")
	f.DefineTool("t", json.RawMessage(`{"v":2}`)) // replaces in place
	g.Property("p", json.RawMessage(`{"v":3}`), true)
	f.setShape("t", &shaped{def: json.RawMessage("2")}) // replaces in place
	f.rendered[message.Identity{Kind: "x"}] = true
	g.blocks[message.Identity{Kind: "state"}] = block{msg: 9}
	f.LLM.Model = "other"

	texts := func(b *Build) []string {
		var s []string
		for _, m := range b.messages {
			s = append(s, m.Text)
		}
		return s
	}
	for _, c := range []struct {
		name       string
		b          *Build
		last, tool string
		prop       string
		model      string
		block      int
		renderedX  bool
	}{
		{"original", b, "three", `{"v":1}`, `{"v":1}`, "m", 1, false},
		{"f", f, "f", `{"v":2}`, `{"v":1}`, "other", 1, true},
		{"g", g, "g", `{"v":1}`, `{"v":3}`, "m", 9, false},
	} {
		if got := texts(c.b); got[len(got)-1] != c.last || !slices.Equal(got[:3], []string{"one", "two", "three"}) {
			t.Errorf("%s: messages %q", c.name, got)
		}
		if got := string(c.b.tools.Get("t")); got != c.tool {
			t.Errorf("%s: tool t = %s, want %s", c.name, got, c.tool)
		}
		if got := string(c.b.props.Get("p")); got != c.prop {
			t.Errorf("%s: property p = %s, want %s", c.name, got, c.prop)
		}
		if c.b.LLM.Model != c.model {
			t.Errorf("%s: model %q, want %q", c.name, c.b.LLM.Model, c.model)
		}
		if got := c.b.blocks[message.Identity{Kind: "state"}].msg; got != c.block {
			t.Errorf("%s: block at %d, want %d", c.name, got, c.block)
		}
		if c.b.rendered[message.Identity{Kind: "x"}] != c.renderedX {
			t.Errorf("%s: rendered x = %v", c.name, !c.renderedX)
		}
	}
	if string(b.shape("t").def) != "1" || string(f.shape("t").def) != "2" || string(g.shape("t").def) != "1" ||
		string(h.shape("t").def) != "3" {
		t.Errorf("shapes: original %s, f %s, g %s", b.shape("t").def, f.shape("t").def, g.shape("t").def)
	}
}
