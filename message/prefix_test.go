package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/ref"
)

func TestLogHasPrefix(t *testing.T) {
	ctx := []Message{
		{Type: TypeTool, Tool: json.RawMessage(`"t0"`)},
		Data("state", json.RawMessage(`{"a":1}`)),
		{Type: TypeData, Kind: "user", Description: "who asks", Data: json.RawMessage(`{"n":"x"}`)}, // not inline
		Text("hello"),
	}
	a, err := NewLog(ctx...)
	if err != nil {
		t.Fatal(err)
	}
	p := a.Prefix()
	if p.Len() != len(ctx) {
		t.Fatalf("Len = %d", p.Len())
	}
	// The log grows; the prefix does not.
	if err := a.Append(Text("more")); err != nil {
		t.Fatal(err)
	}
	if p.Len() != len(ctx) || !a.HasPrefix(p) {
		t.Fatal("a grown log lost its prefix")
	}
	same, _ := NewLog(ctx...)
	longer, _ := NewLog(append(append([]Message(nil), ctx...), Text("again"))...)
	for name, l := range map[string]*Log{"same": same, "longer": longer} {
		if !l.HasPrefix(p) {
			t.Errorf("%s: HasPrefix = false", name)
		}
	}
	changed := func(i int, m Message) *Log {
		c := append([]Message(nil), ctx...)
		c[i] = m
		l, err := NewLog(c...)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for name, l := range map[string]*Log{
		"shorter":          func() *Log { l, _ := NewLog(ctx[:3]...); return l }(),
		"other tool":       changed(0, Message{Type: TypeTool, Tool: json.RawMessage(`"t1"`)}),
		"other data":       changed(1, Data("state", json.RawMessage(`{"a":2}`))),
		"other kind":       changed(1, Data("input", json.RawMessage(`{"a":1}`))),
		"other instance":   changed(1, Message{Type: TypeData, Kind: "state", Instance: "i1", Data: json.RawMessage(`{"a":1}`)}),
		"other describer":  changed(2, Message{Type: TypeData, Kind: "user", Description: "who", Data: json.RawMessage(`{"n":"x"}`)}),
		"inline for rest":  changed(2, Data("user", json.RawMessage(`{"n":"x"}`))),
		"other role":       changed(3, Message{Type: TypeText, Role: RoleSystem, Text: "hello"}),
		"other text":       changed(3, Text("hi")),
		"schema only data": changed(1, Message{Type: TypeData, Kind: "state", Schema: json.RawMessage(`{}`)}),
	} {
		if l.HasPrefix(p) {
			t.Errorf("%s: HasPrefix = true", name)
		}
	}
	head := p.Head(2)
	if head.Len() != 2 || !changed(3, Text("hi")).HasPrefix(head) || changed(1, Data("state", json.RawMessage(`{"a":2}`))).HasPrefix(head) {
		t.Error("Head(2) is not the first two messages")
	}
	if p.Head(99).Len() != p.Len() || p.Head(-1).Len() != 0 {
		t.Error("Head does not clamp")
	}
	if !(&Log{}).HasPrefix(Prefix{}) {
		t.Error("the empty prefix is a prefix of every log")
	}
}

// TestLogPrefixConcurrent compares prefixes while logs grow.
func TestLogPrefixConcurrent(t *testing.T) {
	base := []Message{Text("a"), Data("state", json.RawMessage(`{"x":1}`))}
	a, _ := NewLog(base...)
	p := a.Prefix()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			b, _ := NewLog(base...)
			for range 100 {
				if err := a.Append(Data("state", json.RawMessage(`{"y":2}`))); err != nil {
					t.Error(err)
				}
				if !b.HasPrefix(p) || !a.HasPrefix(p) || !a.HasPrefix(b.Prefix()) {
					t.Error("prefix lost")
				}
			}
		})
	}
	wg.Wait()
}

func TestLogIdentityAt(t *testing.T) {
	l, err := NewLog(
		Message{Type: TypeTool, Tool: json.RawMessage(`"t"`), Instance: "i0"},
		Data("state", json.RawMessage(`{}`)),
		Message{Type: TypeData, Kind: "user", Instance: "u1", Description: "not inline", Data: json.RawMessage(`1`)},
		Text("x"),
	)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Len() {
		m := l.At(i)
		if typ, id := l.IdentityAt(i); typ != m.Type || id != m.Identity() {
			t.Errorf("%d: IdentityAt = %v, %+v; At gives %v, %+v", i, typ, id, m.Type, m.Identity())
		}
	}
	for from := -1; from <= l.Len()+1; from++ {
		got := l.IdentitiesFrom([]TypedIdentity{{Type: "kept"}}, from)
		if len(got) != 1+max(0, l.Len()-max(from, 0)) || got[0].Type != "kept" {
			t.Fatalf("IdentitiesFrom(%d) = %+v", from, got)
		}
		for k, ti := range got[1:] {
			i := max(from, 0) + k
			if typ, id := l.IdentityAt(i); ti.Type != typ || ti.Identity != id {
				t.Errorf("IdentitiesFrom(%d)[%d] = %+v, IdentityAt gives %v, %+v", from, k, ti, typ, id)
			}
		}
	}
}

// TestLogAbout checks that About gives the latest description and schema
// of an identity, each kept until a later message replaces it.
func TestLogAbout(t *testing.T) {
	l, err := NewLog(
		Message{Type: TypeData, Kind: "user", Description: "who asks", Schema: json.RawMessage(`{"type":"object"}`)},
		Data("user", json.RawMessage(`{"n":"x"}`)),
		Message{Type: TypeData, Kind: "user", Instance: "u1", Description: "an instance", Data: json.RawMessage(`{}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	check := func(id Identity, desc, schema string) {
		t.Helper()
		d, s := l.About(id)
		if d != desc || string(s) != schema {
			t.Errorf("About(%+v) = %q, %s; want %q, %s", id, d, s, desc, schema)
		}
	}
	check(Identity{Kind: "user"}, "who asks", `{"type":"object"}`)
	check(Identity{Kind: "user", Instance: "u1"}, "an instance", "")
	check(Identity{Kind: "state"}, "", "")
	if err := l.Append(Message{Type: TypeData, Kind: "user", Description: "the customer", Data: json.RawMessage(`{"n":"y"}`)}); err != nil {
		t.Fatal(err)
	}
	check(Identity{Kind: "user"}, "the customer", `{"type":"object"}`)
}

func TestLogUnknownKindError(t *testing.T) {
	l, _ := NewLog(Text("x"))
	_, err := l.Lookup("state", ref.Path{"a"})
	want := fmt.Errorf("%w %q", ref.ErrUnknownKind, "state")
	re, ok := errors.AsType[*ref.Error](err)
	if !ok || !errors.Is(err, ref.ErrUnknownKind) || !errors.Is(err, ref.ErrNotFound) || re.Err.Error() != want.Error() {
		t.Errorf("Lookup of an unknown kind: %v", err)
	}
}

// TestLogResolves compares Resolves with what Lookup reports, on keyed,
// small and materialised views, with and without an instance.
func TestLogResolves(t *testing.T) {
	var msgs []Message
	for i := range 6 { // keyed: one top-level key per write
		msgs = append(msgs, Message{Type: TypeData, Kind: "state", Data: json.RawMessage(fmt.Sprintf(`{"r%d":{"y":%d}}`, i, i)),
			OutputPath: fmt.Sprintf("†state.r%d", i)})
	}
	msgs = append(msgs,
		Data("input", json.RawMessage(`{"a":{"b":1},"s":"text"}`)),
		Message{Type: TypeData, Kind: "input", Instance: "i1", Data: json.RawMessage(`{"a":{"c":2}}`)},
		Data("notes", json.RawMessage(`{"n":1}`)), Data("notes", json.RawMessage(`{"m":2}`)),
		Data("notes", json.RawMessage(`{"k":3}`)), Data("notes", json.RawMessage(`{"j":4}`)), Data("notes", json.RawMessage(`{"i":5}`)),
	)
	l, err := NewLog(msgs...)
	if err != nil {
		t.Fatal(err)
	}
	paths := []ref.Path{nil, {"r0"}, {"r0", "y"}, {"r0", "z"}, {"r9"}, {"a"}, {"a", "b"}, {"a", "c"}, {"s", "x"}, {"n"}, {"i"}, {"zz"}}
	for _, kind := range []string{"state", "input", "notes", "missing"} {
		for _, inst := range []string{"", "i1", "i2"} {
			for _, p := range paths {
				var src ref.Source = l
				if inst != "" {
					src = l.Instance(inst)
				}
				_, lerr := src.Lookup(kind, p)
				if got, want := l.Resolves(inst, kind, p), !errors.Is(lerr, ref.ErrNotFound); got != want {
					t.Errorf("Resolves(%q, %q, %v) = %v; Lookup says %v", inst, kind, p, got, lerr)
				}
			}
		}
	}
}

func TestLogLastOf(t *testing.T) {
	l, err := NewLog(
		Message{Type: TypeTool, Tool: json.RawMessage(`"a"`)},
		Data("state", json.RawMessage(`{"x":1}`)),
		Message{Type: TypePlan, Plan: json.RawMessage(`[]`)},
		Text("hi"),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		types []Type
		at    int
		typ   Type
	}{
		{[]Type{TypePlan}, 2, TypePlan},
		{[]Type{TypeTool, TypeData}, 1, TypeData},
		{[]Type{TypeTool}, 0, TypeTool},
		{[]Type{TypeMeta}, -1, ""},
		{nil, -1, ""},
	} {
		if at, typ := l.LastOf(tt.types...); at != tt.at || typ != tt.typ {
			t.Errorf("LastOf(%v) = %d, %q, want %d, %q", tt.types, at, typ, tt.at, tt.typ)
		}
	}
	if at, typ := (&Log{}).LastOf(TypeText); at != -1 || typ != "" {
		t.Errorf("empty log: %d, %q", at, typ)
	}
}

// TestPrefixNewLog checks a log made from a frozen prefix: it holds what
// NewLog gives for the same messages (values and views of the data in the
// prefix included), it and the log the prefix came from grow apart
// without writing over each other, and a context that does not start
// with the prefix is refused.
func TestPrefixNewLog(t *testing.T) {
	tool := Message{Type: TypeTool, Tool: json.RawMessage(`"t"`)}
	base := []Message{
		tool,
		{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"x":1}`), Description: "the state"},
		{Type: TypeText, Role: RoleSystem, Text: "sys", Description: "not inline"},
		Text("hi"),
	}
	orig, err := NewLog(base...)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := orig.Prefix().NewLog(base...); ok {
		t.Error("a prefix that is not frozen made a log")
	}
	p := orig.Prefix().Freeze()
	if p.Freeze().Len() != 4 || (Prefix{}).Freeze().Len() != 0 {
		t.Error("Freeze changed the messages")
	}
	more := append(slices.Clone(base), Data("state", json.RawMessage(`{"y":2}`)))
	got, ok, err := p.NewLog(more...)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	want, _ := NewLog(more...)
	if !reflect.DeepEqual(got.Messages(), want.Messages()) {
		t.Errorf("messages\n%+v\nwant\n%+v", got.Messages(), want.Messages())
	}
	gv, _, _ := got.Value(Identity{Kind: "state"})
	wv, _, _ := want.Value(Identity{Kind: "state"})
	gd, _ := got.About(Identity{Kind: "state"})
	if string(gv) != string(wv) || gd != "the state" {
		t.Errorf("state %s %q, want %s", gv, gd, wv)
	}
	if !got.HasPrefix(p) || !got.HasPrefix(orig.Prefix()) {
		t.Error("the log does not start with its prefix")
	}
	// Both logs grow; neither sees the other's messages.
	for i := range 40 {
		if err := orig.Append(Text(fmt.Sprint("o", i))); err != nil {
			t.Fatal(err)
		}
		if err := got.Append(Text(fmt.Sprint("g", i))); err != nil {
			t.Fatal(err)
		}
	}
	if m := orig.At(4); m.Text != "o0" {
		t.Errorf("the original log's message 4 is %+v", m)
	}
	if m := got.At(5); m.Text != "g0" || got.Len() != 45 {
		t.Errorf("the new log's message 5 is %+v", m)
	}
	if m := got.At(3); m.Text != "hi" {
		t.Errorf("a shared message became %+v", m)
	}
	// Contexts that do not start with the prefix.
	for _, msgs := range [][]Message{
		base[:3],
		{tool, base[1], base[2], Text("other")},
		{{Type: TypeTool, Tool: json.RawMessage(`"t"`), Description: "d"}, base[1], base[2], base[3]},
		{tool, base[1], {Type: TypeText, Role: RoleSystem, Text: "sys"}, base[3]},
	} {
		if l, ok, err := p.NewLog(msgs...); ok || l != nil || err != nil {
			t.Errorf("%+v: ok %v, %v", msgs, ok, err)
		}
	}
	// A bad message past the prefix is reported at its place.
	if _, ok, err := p.NewLog(append(slices.Clone(base), Message{Type: TypeData, Kind: "state", Data: json.RawMessage(`{`)})...); !ok || err == nil || !strings.Contains(err.Error(), "4") {
		t.Errorf("bad message: ok %v, %v", ok, err)
	}
}

// TestPrefixNewLogConcurrent: logs sharing one frozen prefix grow at once.
func TestPrefixNewLogConcurrent(t *testing.T) {
	base := []Message{Text("a"), Data("state", json.RawMessage(`{"x":1}`))}
	a, _ := NewLog(base...)
	p := a.Prefix().Freeze()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			l, ok, err := p.NewLog(base...)
			if !ok || err != nil {
				t.Error(ok, err)
				return
			}
			for i := range 50 {
				if err := l.Append(Data("state", json.RawMessage(fmt.Sprintf(`{"g%d":%d}`, g, i)))); err != nil {
					t.Error(err)
				}
			}
			v, _, _ := l.Value(Identity{Kind: "state"})
			if want := fmt.Sprintf(`{"g%d":49,"x":1}`, g); string(v) != want {
				t.Errorf("state %s, want %s", v, want)
			}
		})
	}
	wg.Wait()
}
