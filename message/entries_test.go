package message

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

// TestEntries checks that positions fill the chunks in order, each to
// its size, and that a snapshot is not changed by later appends, for
// first chunks of every kind of size.
func TestEntries(t *testing.T) {
	for _, reserve := range []int{-1, 0, 1, 8, 11, 100, 5000} {
		var s entries
		if reserve >= 0 {
			s.reserve(reserve)
		}
		var snap entries
		chunks := func() [][]entry {
			if s.first == nil {
				return nil
			}
			return append([][]entry{s.first}, s.rest...)
		}
		for p := range 3*chunkMax + restStart + 10 {
			if p == 100 {
				snap = s
			}
			cs := chunks()
			if p > 0 || reserve > 0 {
				k, off := s.locate(p)
				if k > len(cs) || (k < len(cs) && off >= len(cs[k])) {
					t.Fatalf("reserve %d: locate(%d) = %d, %d with %d chunks", reserve, p, k, off, len(cs))
				}
				if k == len(cs) && off != 0 {
					t.Fatalf("reserve %d: locate(%d) = %d, %d starts a chunk past its start", reserve, p, k, off)
				}
				if k < len(cs) && off != 0 {
					if pk, poff := s.locate(p - 1); pk != k || poff != off-1 {
						t.Fatalf("reserve %d: locate(%d) = %d, %d after %d, %d", reserve, p, k, off, pk, poff)
					}
				}
			}
			s.push().kind = string(rune('a' + p%26))
		}
		for p := range s.n {
			if got := s.at(p).kind; got != string(rune('a'+p%26)) {
				t.Fatalf("reserve %d: at(%d) = %q", reserve, p, got)
			}
		}
		first := min(max(chunkMin, 2*reserve), chunkMax)
		for i, c := range chunks() {
			want := chunkMax
			switch {
			case i == 0:
				want = first
			case i <= restLog:
				want = chunkMin << (i - 1)
			}
			if len(c) != want {
				t.Errorf("reserve %d: chunk %d holds %d, want %d", reserve, i, len(c), want)
			}
		}
		if snap.n != 100 || snap.at(99).kind != string(rune('a'+99%26)) {
			t.Errorf("reserve %d: snapshot changed: %d entries", reserve, snap.n)
		}
	}
}

// TestPackRoundTrip checks that every message comes back from its entry
// as it went in, inline or not, and that the entry reports its type and
// identity as the message does.
func TestPackRoundTrip(t *testing.T) {
	raw := json.RawMessage(`{"a":1}`)
	outs, err := Outputs(json.RawMessage(`{"_tool":"t","_outputPath":"†state.a.b","_instance":"i"}`), raw, Success, time.Unix(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	var rest Message
	var e entry
	if e.pack(&outs[0], &rest); e.rest != nil {
		t.Errorf("an output message is not kept inline")
	}
	moved := outs[0] // its Data replaced: what it wrote no longer lies in it
	moved.Data = append(json.RawMessage(nil), moved.Data...)
	msgs := []Message{
		Text("hi"),
		{Type: TypeText, Role: RoleSystem, Text: "sys", Instance: "i"},
		{Type: TypeText},
		{Type: TypeText, Text: "x", Kind: "state"},
		{Type: TypeText, Text: "x", Tool: raw},
		{Type: TypeTool, Tool: json.RawMessage(`"t0"`)},
		{Type: TypeTool, Tool: json.RawMessage{}, Instance: "i"},
		{Type: TypeTool},
		{Type: TypeTool, Tool: raw, Data: raw},
		{Type: TypeTool, Tool: raw, Text: "x"},
		{Type: TypeTool, Tool: raw, Role: RoleUser},
		{Type: TypeTool, Tool: raw, Date: "d"},
		{Type: TypePlan, Plan: json.RawMessage(`[]`)},
		{Type: TypePlan, Plan: raw, Tool: raw},
		{Type: TypeMeta, Meta: raw},
		{Type: TypeMeta, Meta: raw, Plan: raw},
		{Type: TypeAdvisor, Advisor: &Advisor{ID: "a"}, Schema: raw},
		{Type: TypeError, Failed: raw, Error: "e", Extra: json.RawMessage(`{"kind":"runtime"}`)},
		Data("state", raw),
		{Type: TypeData, Kind: "state", Data: raw, Description: "d"},
		{Type: TypeData, Kind: "state", Schema: raw},
		{Type: TypeData, Kind: "state", Data: raw, Text: "x"},
		{Type: TypeData, Kind: "state", Data: raw, Tool: raw},
		outs[0],
		moved,
		{Type: TypeData, Kind: "state", Data: raw, Method: "weird"},
		{Type: TypeData, Kind: "state", Data: raw, Method: ref.MethodPush, OutputPath: "†state.a"},
		{Type: "custom", Extra: raw},
		{Type: "custom"},
		{Type: "custom", Data: raw},
		{},
	}
	for i, m := range msgs {
		var rest Message
		var e entry
		e.pack(&m, &rest)
		want := m
		want.target = nil // the parsed output is not kept (see Log.AppendOutput)
		if got := e.message(); !reflect.DeepEqual(got, want) {
			t.Errorf("%d: got %+v, want %+v", i, got, want)
		}
		if e.typeOf() != m.Type || e.isData() != m.IsData() || e.identity() != m.Identity() {
			t.Errorf("%d: entry says %q %v %v, message %q %v %v", i, e.typeOf(), e.isData(), e.identity(), m.Type, m.IsData(), m.Identity())
		}
	}
}

// TestTypeAt checks that TypeAt agrees with At.
func TestTypeAt(t *testing.T) {
	log, err := NewLog(Text("hi"), Message{Type: TypeTool, Tool: json.RawMessage(`"t"`)}, Data("state", json.RawMessage(`{}`)),
		Message{Type: TypeError, Error: "e"}, Message{Type: "custom", Extra: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range log.Len() {
		if got, want := log.TypeAt(i), log.At(i).Type; got != want {
			t.Errorf("TypeAt(%d) = %q, want %q", i, got, want)
		}
	}
}
