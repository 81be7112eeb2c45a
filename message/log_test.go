package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

// sampleMessages returns one message of every shape a log holds.
func sampleMessages(t *testing.T) []Message {
	t.Helper()
	raw := func() json.RawMessage { return json.RawMessage(`{"a":1}`) }
	outs, err := Outputs(json.RawMessage(`{"_tool":"t","_outputPath":"†state.a.b","_instance":"i"}`), raw(), Success, time.Unix(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	return []Message{
		Text("hi"),
		{Type: TypeText, Role: RoleSystem, Text: "sys", Instance: "i"},
		{Type: TypeText, Role: RoleUser, Text: "x", Kind: "state"},
		{Type: TypeTool, Tool: json.RawMessage(`"t0"`)},
		{Type: TypeTool, Tool: json.RawMessage{}, Instance: "i"},
		{Type: TypePlan, Plan: json.RawMessage(`[{"_tool":"t"}]`)},
		{Type: TypeMeta, Meta: raw()},
		{Type: TypeAdvisor, Advisor: &Advisor{ID: "a", Role: "r", Scopes: []string{"x", "y"}}, Schema: raw()},
		{Type: TypeError, Failed: raw(), Error: "e", Extra: json.RawMessage(`{"kind":"runtime"}`)},
		Data("state", raw()),
		{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"b":[1,2]}`), Description: "d", Schema: json.RawMessage(`{"type":"object"}`)},
		{Type: TypeData, Kind: "input", Schema: raw()},
		outs[0],
		{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"b":3}`), Method: ref.MethodPush, OutputPath: "†state.b"},
		{Type: "custom", Extra: raw()},
		{Type: "custom"},
	}
}

// TestLogKeepsMessages checks that every message comes back from the log
// as it went in, and that IdentityAt and LastOf agree with At.
func TestLogKeepsMessages(t *testing.T) {
	msgs := sampleMessages(t)
	log, err := NewLog(msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if got := log.Messages(); !reflect.DeepEqual(got, msgs) {
		t.Errorf("Messages:\n%+v\nwant\n%+v", got, msgs)
	}
	for i, m := range log.All() {
		if !reflect.DeepEqual(m, msgs[i]) || !reflect.DeepEqual(log.At(i), msgs[i]) {
			t.Errorf("%d: All gives %+v, At %+v, want %+v", i, m, log.At(i), msgs[i])
		}
		if typ, id := log.IdentityAt(i); typ != m.Type || id != m.Identity() {
			t.Errorf("%d: IdentityAt = %v, %+v; At gives %v, %+v", i, typ, id, m.Type, m.Identity())
		}
	}
	want := []Identity{{Kind: "state"}, {Kind: "input"}, {Kind: "state", Instance: "i"}}
	if got := log.Identities(); !reflect.DeepEqual(got, want) {
		t.Errorf("Identities = %v, want %v", got, want)
	}
}

// TestLogCopies changes every byte of what the log was given and of what
// it hands out, and checks that the log is unchanged.
func TestLogCopies(t *testing.T) {
	msgs := sampleMessages(t)
	log, err := NewLog(msgs...)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b []byte
		for _, m := range log.Messages() {
			j, err := m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, j...), '\n')
		}
		for _, id := range log.Identities() {
			v, ok, err := log.Value(id)
			d, s := log.About(id)
			b = fmt.Appendf(b, "%v %s %v %v %q %s\n", id, v, ok, err, d, s)
		}
		return string(b)
	}
	before := snapshot()

	spoil := func(m *Message) {
		for _, r := range []json.RawMessage{m.Schema, m.Data, m.Tool, m.Plan, m.Meta, m.Failed, m.Call, m.Extra} {
			spoilBytes(r)
		}
		if a := m.Advisor; a != nil {
			a.ID, a.Role, a.IsInstanced = "spoilt", "spoilt", true
			for i := range a.Scopes {
				a.Scopes[i] = "spoilt"
			}
		}
	}
	for i := range msgs {
		spoil(&msgs[i])
	}
	for i := range log.Len() {
		m := log.At(i)
		spoil(&m)
	}
	for _, m := range log.Messages() {
		spoil(&m)
	}
	for _, m := range log.All() {
		spoil(&m)
	}
	for _, id := range log.Identities() {
		v, _, _ := log.Value(id)
		spoilBytes(v)
		_, s := log.About(id)
		spoilBytes(s)
		for _, p := range []ref.Path{nil, {"a"}, {"a", "b"}, {"b"}} {
			v, _ := log.Lookup(id.Kind, p)
			spoilBytes(v)
			v, _ = log.Instance(id.Instance).Lookup(id.Kind, p)
			spoilBytes(v)
		}
	}
	if after := snapshot(); after != before {
		t.Errorf("the log changed:\n%s\nwas\n%s", after, before)
	}
}

// spoilBytes writes over every byte of b.
func spoilBytes(b []byte) {
	for i := range b {
		b[i] = '!'
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
	// Another instance has the kind: the error says where it looked.
	if err := l.Append(Message{Type: TypeData, Kind: "state", Instance: "a", Data: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = l.Instance("b").Lookup("state", ref.Path{"a"})
	if want := `unknown kind "state" in instance "b" or the global context`; !errors.Is(err, ref.ErrUnknownKind) || !strings.Contains(err.Error(), want) {
		t.Errorf("Lookup of a kind only another instance has: %v, want it to say %q", err, want)
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

func TestMessageWrite(t *testing.T) {
	for _, tt := range []struct {
		name   string
		m      Message
		path   string
		method ref.Method
		value  string
		ok     bool
	}{
		{"plain data merges at the root", Message{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"a":1}`)}, "", ref.MethodMerge, `{"a":1}`, true},
		{"an output sets its path", Message{Type: TypeData, Kind: "state", OutputPath: "†state.r.x", Data: json.RawMessage(`{"r":{"x":[1,2]}}`)}, "r.x", ref.MethodSet, `[1,2]`, true},
		{"a push", Message{Type: TypeData, Kind: "state", OutputPath: "†state.items", Method: ref.MethodPush, Data: json.RawMessage(`{"items":"z"}`)}, "items", ref.MethodPush, `"z"`, true},
		{"a schema only", Message{Type: TypeData, Kind: "input", Schema: json.RawMessage(`{}`)}, "", "", "", false},
		{"not data", Message{Type: TypeText, Text: "hi"}, "", "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path, method, value, ok, err := tt.m.Write()
			if err != nil || ok != tt.ok || path.String() != tt.path || method != tt.method || string(value) != tt.value {
				t.Errorf("Write() = %q, %q, %s, %v, %v; want %q, %q, %s, %v", path, method, value, ok, err, tt.path, tt.method, tt.value, tt.ok)
			}
		})
	}
}

// TestInstanceOverridesFieldByField checks the instance view of page 013:
// an instance's object lays its members over the global one, so reading
// an object and reading a member of it agree; an instance's array or
// scalar replaces the global value and all under it.
func TestInstanceOverridesFieldByField(t *testing.T) {
	log, err := NewLog(
		Message{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"cfg":{"keep":1,"mode":"a","deep":{"x":1,"y":2}},"list":[1,2],"n":{"k":1}}`)},
		Message{Type: TypeData, Kind: "state", Instance: "i", Data: json.RawMessage(`{"cfg":{"mode":"b","deep":{"y":3}},"list":[9],"n":5}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	src := log.Instance("i")
	for _, tt := range []struct{ path, want string }{
		{"cfg", `{"deep":{"x":1,"y":3},"keep":1,"mode":"b"}`},
		{"cfg.keep", `1`},
		{"cfg.mode", `"b"`},
		{"cfg.deep", `{"x":1,"y":3}`},
		{"cfg.deep.x", `1`},
		{"list", `[9]`},
		{"list.1", ``}, // the instance's array replaces the global one
		{"n", `5`},
		{"n.k", ``}, // and so does its scalar
	} {
		p, _ := ref.ParsePath(tt.path)
		got, err := src.Lookup("state", p)
		if tt.want == "" {
			if !errors.Is(err, ref.ErrNotFound) {
				t.Errorf("†state.%s = %s, %v; want not found", tt.path, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("†state.%s = %s, %v; want %s", tt.path, got, err, tt.want)
		}
	}
	if got, err := log.Instance("other").Lookup("state", ref.Path{"cfg", "mode"}); err != nil || string(got) != `"a"` {
		t.Errorf("another instance reads %s, %v; want the global value", got, err)
	}
}

// TestLogInstances: the instances of the data, in order of first
// appearance, each once; the slice returned is the caller's.
func TestLogInstances(t *testing.T) {
	b := Data(KindInput, json.RawMessage(`{"x":1}`))
	b.Instance = "b"
	a := Data(KindState, json.RawMessage(`{"y":2}`))
	a.Instance = "a"
	b2 := Data(KindState, json.RawMessage(`{"z":3}`))
	b2.Instance = "b"
	l, err := NewLog(Text("go"), b, Data(KindState, json.RawMessage(`{}`)), a, b2)
	if err != nil {
		t.Fatal(err)
	}
	got := l.Instances()
	if !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("instances %q", got)
	}
	got[0] = "changed"
	if !slices.Equal(l.Instances(), []string{"b", "a"}) || !l.HasInstance("a") || l.HasInstance("") || l.HasInstance("c") {
		t.Errorf("after changing the copy: %q; a %v, c %v", l.Instances(), l.HasInstance("a"), l.HasInstance("c"))
	}
}

// TestCheckAllDoesNotCopyTheValue: a call that writes one identity at
// unrelated paths (†state.k && †state.last) is checked against the
// identity's value as it is, so checking it costs the same however large
// the value has grown.
func TestCheckAllDoesNotCopyTheValue(t *testing.T) {
	allocs := func(keys int) float64 {
		log := &Log{}
		for i := range keys {
			if err := log.Append(Message{Type: TypeData, Kind: "state", Data: json.RawMessage(fmt.Sprintf(`{"k%d":{"y":%d}}`, i, i))}); err != nil {
				t.Fatal(err)
			}
		}
		call := json.RawMessage(`{"_tool":"t","_outputPath":"†state.new && †state.last"}`)
		msgs, err := Outputs(call, json.RawMessage(`{"y":1}`), Success, time.Unix(0, 0))
		if err != nil || len(msgs) != 2 {
			t.Fatal(len(msgs), err)
		}
		return testing.AllocsPerRun(20, func() {
			if i, err := log.CheckAll(msgs...); i >= 0 {
				t.Fatal(err)
			}
		})
	}
	// A copy of the value would cost an allocation or more a key; the race
	// detector's instrumentation may add one here or there.
	if small, large := allocs(10), allocs(1000); large > small+5 {
		t.Errorf("CheckAll: %v allocations on a value of 10 keys, %v on one of 1,000", small, large)
	}
}
