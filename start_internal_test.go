package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/augceo/agent/jsonstream"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
)

// TestBuildForkIsolates checks that forks of one Build and the Build
// itself never see each other's writes: appends, tools and properties
// replaced in place, and data identities shown.
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
	b.shown.add(message.Identity{Kind: "state"}, block{msg: 1}, true)
	b.shown.add(message.Identity{Kind: "log"}, block{msg: 2}, true)
	b.shown.add(message.Identity{Kind: "notes"}, block{msg: 3}, true) // len 3, cap 4: an add in place would be shared
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
	f.shown.add(message.Identity{Kind: "x"}, block{}, false)
	g.shown.add(message.Identity{Kind: "y"}, block{msg: 9}, true)
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
		block      int // of y
		renderedX  bool
	}{
		{"original", b, "three", `{"v":1}`, `{"v":1}`, "m", -1, false},
		{"f", f, "f", `{"v":2}`, `{"v":1}`, "other", -1, true},
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
		if bl, ok := c.b.shown.blockOf(message.Identity{Kind: "y"}); ok != (c.block >= 0) || ok && bl.msg != c.block {
			t.Errorf("%s: block of y at %d (%v), want %d", c.name, bl.msg, ok, c.block)
		}
		if bl, ok := c.b.shown.blockOf(message.Identity{Kind: "state"}); !ok || bl.msg != 1 {
			t.Errorf("%s: block of state at %d (%v), want 1", c.name, bl.msg, ok)
		}
		if c.b.shown.has(message.Identity{Kind: "x"}) != c.renderedX {
			t.Errorf("%s: rendered x = %v", c.name, !c.renderedX)
		}
		if _, ok := c.b.shown.blockOf(message.Identity{Kind: "x"}); ok {
			t.Errorf("%s: x, rendered without a block, has one", c.name)
		}
	}
	if string(b.shape("t").def) != "1" || string(f.shape("t").def) != "2" || string(g.shape("t").def) != "1" ||
		string(h.shape("t").def) != "3" {
		t.Errorf("shapes: original %s, f %s, g %s", b.shape("t").def, f.shape("t").def, g.shape("t").def)
	}
}

// TestParseTrusted checks that a solution read without its calls is the
// one parseSolution reads, and that parseTrusted stands aside wherever it
// cannot be sure.
func TestParseTrusted(t *testing.T) {
	trusted, err := schema.Compile(json.RawMessage(`{"type":"object","properties":{
		"calls":{"type":"array","items":{"type":"object"}},
		"output":{"type":["object","null"],"properties":{"done":{"type":"boolean"}}}},
		"required":["calls","output"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	streamOf := func(text string) *streamed {
		x, err := jsonstream.NewExtractor("calls")
		if err != nil {
			t.Fatal(err)
		}
		st := &streamed{text: text, path: "calls"}
		els, ferr := x.Feed([]byte(text))
		end, eerr := x.End()
		for _, e := range append(els, end...) {
			st.calls = append(st.calls, e.Value)
			st.emitted++
		}
		if ferr == nil && eerr == nil {
			if sp := x.Spans(); len(sp) == 1 {
				st.span, st.spanned = sp[0], true
			}
		}
		return st
	}
	for _, c := range []struct {
		name, text string
		read       bool // parseTrusted reads it
	}{
		{"calls and no output", `{"calls":[{"_tool":"a","x":1}, {"_tool":"b"}],"output":null}`, true},
		{"output", `{"calls":[],"output":{"done":true}}`, true},
		{"white space around", " \n {\"calls\": [ {\"_tool\":\"a\"} ] ,\"output\":{\"done\":false}}\n", true},
		{"escaped output key", `{"calls":[{"_tool":"a"}],"outp\u0075t":{"done":true}}`, true},
		{"output first", `{"output":{"done":true},"calls":[{"_tool":"a"}]}`, true},
		{"a call that is not an object", `{"calls":[{"_tool":"a"},7],"output":null}`, false},
		{"invalid output", `{"calls":[{"_tool":"a"}],"output":{"done":"yes"}}`, false},
		{"missing output", `{"calls":[{"_tool":"a"}]}`, false},
		{"extra property", `{"calls":[],"output":null,"more":1}`, false},
		{"calls twice", `{"calls":[{"_tool":"a"}],"calls":[{"_tool":"b"}],"output":null}`, false},
		{"fenced", "```json\n{\"calls\":[{\"_tool\":\"a\"}],\"output\":null}\n```", false},
		{"calls not an array", `{"calls":{"_tool":"a"},"output":null}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := streamOf(c.text)
			got := &Solution{}
			if read := parseTrusted(st, trusted, got); read != c.read {
				t.Fatalf("read = %v, want %v", read, c.read)
			}
			if !c.read {
				return
			}
			if len(got.Output) > 0 { // in the text, not in the buffer it was cut into
				at := uintptr(unsafe.Pointer(unsafe.SliceData(got.Output))) - uintptr(unsafe.Pointer(unsafe.SliceData(got.Raw)))
				if at >= uintptr(len(got.Raw)) || !bytes.Equal(got.Raw[at:int(at)+len(got.Output)], got.Output) {
					t.Errorf("output %s is not in the text", got.Output)
				}
			}
			parseTrusted(streamOf(`{"calls":[{"_tool":"a"}],"output":{"done":"overwritten"}}`), trusted, &Solution{})
			want, err := parseSolution(c.text, trusted, st.emitted)
			if err != nil {
				t.Fatalf("parseSolution: %v", err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) || string(got.Raw) != string(want.Raw) {
				t.Errorf("got %s\nwant %s", g, w)
			}
		})
	}
	st := streamOf(`{"calls":[{"_tool":"a"}],"output":null}`)
	st.emitted++ // a call the extractor handed over that the text does not show
	if parseTrusted(st, trusted, &Solution{}) {
		t.Error("read a solution whose calls do not match what was handed over")
	}
}

// TestStartCacheKeepsTheHead checks that a loop keeps the head of its
// context (up to its last tool) when the rest holds no data, so that a run
// asking something else of the same agent starts from it; and not when the
// rest holds data, whose merged value the head's blocks would show.
func TestStartCacheKeepsTheHead(t *testing.T) {
	reg := NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	cfg := Config{Registry: reg}
	llm := llmSettings(cfg)
	logOf := func(msgs ...message.Message) *message.Log {
		l, err := message.NewLog(msgs...)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	system := message.Message{Type: message.TypeText, Role: message.RoleSystem, Text: "Be brief."}
	tool := message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}
	if _, err := prepareStart(t.Context(), cfg, nil, logOf(system, tool, message.Text("a?"))); err != nil {
		t.Fatal(err)
	}
	s := reg.startFor(reg.version.Load(), &llm, nil, logOf(system, tool, message.Text("b?")))
	if s == nil || s.prefix.Len() != 2 {
		t.Fatalf("start for another question: %+v", s)
	}
	s = reg.startFor(reg.version.Load(), &llm, nil, logOf(system, tool, message.Text("a?"), message.Text("more")))
	if s == nil || s.prefix.Len() != 3 {
		t.Fatalf("start for the next turn: %+v", s)
	}

	other := NewRegistry()
	other.Tool("t", json.RawMessage(`{"type":"object"}`))
	cfg.Registry = other
	if _, err := prepareStart(t.Context(), cfg, nil, logOf(tool, message.Data("input", json.RawMessage(`{"q":1}`)), message.Text("a?"))); err != nil {
		t.Fatal(err)
	}
	if s := other.startFor(other.version.Load(), &llm, nil, logOf(tool, message.Text("b?"))); s != nil {
		t.Fatalf("a head was kept though the rest held data: %d messages", s.prefix.Len())
	}
}

// TestRunLogSharesTheStart checks that a run's log shares the messages of
// the longest cached start its context begins with: made in one
// allocation, it holds the context all the same, and a context that
// begins with no start gets a log of its own.
func TestRunLogSharesTheStart(t *testing.T) {
	reg := NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	cfg := Config{Registry: reg}
	system := message.Message{Type: message.TypeText, Role: message.RoleSystem, Text: "Be brief."}
	tool := message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}
	first := []message.Message{system, tool, message.Text("a?")}
	log, err := reg.runLog(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prepareStart(t.Context(), cfg, nil, log); err != nil { // keeps the head and the whole context
		t.Fatal(err)
	}
	for _, msgs := range [][]message.Message{first, {system, tool, message.Text("b?")}, {system, tool, message.Text("a?"), message.Text("more")}} {
		log, err := reg.runLog(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := log.Messages(); !reflect.DeepEqual(got, msgs) {
			t.Errorf("log %+v, want %+v", got, msgs)
		}
	}
	// The whole first context is a start: its log is one allocation, where
	// a log of its own is two, the log and its messages.
	if allocs := testing.AllocsPerRun(10, func() {
		if _, err := reg.runLog(first); err != nil {
			t.Fatal(err)
		}
	}); allocs != 1 {
		t.Errorf("%v allocations: the start was not shared", allocs)
	}
	if _, err := reg.runLog([]message.Message{tool}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.runLog([]message.Message{system, tool, {Type: message.TypeData, Kind: "state", Data: json.RawMessage("{")}}); err == nil {
		t.Error("a bad message past the start was taken")
	}
}

func TestCallID(t *testing.T) {
	for _, c := range []struct {
		s, c int
		want string
	}{{1, 0, "1.0"}, {2, 7, "2.7"}, {8, 31, "8.31"}, {9, 0, "9.0"}, {1, 32, "1.32"}, {12, 345, "12.345"}} {
		if got := callID(c.s, c.c); got != c.want {
			t.Errorf("callID(%d, %d) = %q, want %q", c.s, c.c, got, c.want)
		}
	}
}
