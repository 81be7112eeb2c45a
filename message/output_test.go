package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

// TestOutputsShareBuffer checks the messages Outputs builds in one buffer:
// each holds its own data and the date, and writing to one's Data does
// not change the others or the date.
func TestOutputsShareBuffer(t *testing.T) {
	big := `{"text":"` + string(bytes.Repeat([]byte("x"), 200)) + `"}`
	for _, tt := range []struct {
		path, result string
		date         time.Time
	}{
		{"†state.r0", `{"y":1}`, time.Date(2025, 10, 26, 12, 0, 0, 123456789, time.UTC)},
		{"†state", `{"y":1}`, time.Unix(0, 0)},
		{"†state.a.b", `{ "y" : [1, 2] }`, time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))},
		{"†state.a && †input.b.c", `7`, time.Unix(1, 0)},
		{"†state.é.ü", `"s"`, time.Unix(1, 0)},
		{"†state.r0", big, time.Unix(1, 0)},
		{"†state.r0 && †state.r1", big, time.Unix(1, 0)},
		{"†state.r0", `1`, time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"†state.r0", `1`, time.Time{}},
	} {
		call := json.RawMessage(`{"_tool":"t","_outputPath":` + string(quote(tt.path)) + `}`)
		ms, err := Outputs(call, json.RawMessage(tt.result), Success, tt.date)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		e, _ := ref.Parse(tt.path)
		if len(ms) != len(e.Alts[0]) {
			t.Fatalf("%s: %d messages", tt.path, len(ms))
		}
		res := compact(json.RawMessage(tt.result))
		stamp := tt.date.UTC().Format(time.RFC3339Nano)
		want := make([]string, len(ms))
		for i, r := range e.Alts[0] {
			want[i] = string(wrapRaw(r.Path, res))
		}
		for i := range ms {
			m := &ms[i]
			if string(m.Data) != want[i] || m.Date != stamp || string(m.written) != string(res) {
				t.Errorf("%s: message %d has data %s, date %q, value %s; want %s, %q, %s", tt.path, i, m.Data, m.Date, m.written, want[i], stamp, res)
			}
			_ = append(m.Data, "garbage"...)
			for j := range m.Data {
				m.Data[j] = 'z'
			}
		}
		for i := range ms {
			if ms[i].Date != stamp || i > 0 && string(ms[i-1].Data) != string(bytes.Repeat([]byte("z"), len(want[i-1]))) {
				t.Errorf("%s: message %d changed by a write to another", tt.path, i)
			}
		}
	}
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// TestParseOutputPlain checks the plain path against the general parse.
func TestParseOutputPlain(t *testing.T) {
	for _, s := range []string{"†state", "†state.a", "†s-t_1.a.b.c.d", "†state.a.b.c.d.e", "†state.a~!@#$%^*()+=[]{}<>?/,;:'`", "†state.0.1"} {
		o, err := ParseOutput(CallMeta{OutputPath: s, OutputMethod: "push"})
		if err != nil {
			t.Fatal(err)
		}
		e, err := ref.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.Path, e) || o.Method != ref.MethodPush || o.targets[0][0].text != s {
			t.Errorf("%q: got %#v %q, want %#v", s, o.Path, o.Method, e)
		}
	}
	if _, err := ParseOutput(CallMeta{OutputPath: "†state.a", OutputMethod: "nope"}); err == nil {
		t.Error("an unknown method was accepted")
	}
}

// TestAppendStamp checks the date of output messages against the layout.
func TestAppendStamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	times := []time.Time{{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(0, 100), time.Unix(1, 999999999),
		time.Date(9999, 12, 31, 23, 59, 59, 120000000, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(2025, 10, 26, 12, 0, 0, 0, time.FixedZone("x", -9000))}
	for range 10000 {
		times = append(times, time.Unix(rng.Int64N(400e9)-100e9, rng.Int64N(1e9)).In(time.FixedZone("y", rng.IntN(86400)-43200)))
		times = append(times, time.Unix(rng.Int64N(4e9), rng.Int64N(1000)*1e6))
		// The same second again, elsewhere and at other nanoseconds:
		// what appendStamp keeps from the last stamp.
		last := times[len(times)-1]
		times = append(times, time.Unix(last.Unix(), rng.Int64N(1e9)).In(time.FixedZone("z", 3600)), time.Unix(last.Unix(), 0))
	}
	for _, tm := range times {
		if got, want := string(appendStamp([]byte("x"), tm)), "x"+tm.UTC().Format(time.RFC3339Nano); got != want {
			t.Fatalf("appendStamp(%v) = %q, want %q", tm, got, want)
		}
	}
}

// TestParseOutputAllocs checks that the usual output path parses in one
// allocation.
func TestParseOutputAllocs(t *testing.T) {
	meta := CallMeta{OutputPath: "†state.r3"}
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseOutput(meta) }); n != 1 {
		t.Errorf("ParseOutput: %v allocations, want 1", n)
	}
}

// TestLogAppendOutput checks that AppendOutput leaves a log as appending
// the messages of Output.Messages does: the same messages, values and
// errors, for single, branching and fanned-out paths, instances, methods
// and results that clash with what is there.
func TestLogAppendOutput(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	base := []Message{Data("state", json.RawMessage(`{"n":1,"s":"x"}`)), Text("go")}
	for _, tt := range []struct {
		path, method, instance, result string
		b                              Branch
	}{
		{path: "†state.r", result: `{"y":1}`},
		{path: "†state.r", result: ` { "y" : 1 } `},
		{path: "†state.a.b.c", result: `[1,2]`, instance: "i1"},
		{path: "†state.ok || †state.err", result: `1`},
		{path: "†state.ok || †state.err", result: `{"error":"no"}`, b: Failure},
		{path: "†state.ok || †state.err", result: `2`, b: 1},
		{path: "†state.ok || †state.err", result: `2`, b: 2},
		{path: "†state.r", result: `1`, b: Failure},
		{path: "†state.a && †notes.b", result: `"v"`},
		{path: "†state.s", method: "push", result: `"y"`},
		{path: "†state.s.t", result: `1`}, // s is a string: a clash the log records
		{path: "†state.n", method: "merge", result: `{"m":1}`},
		{path: "†state", result: `{"whole":true}`},
		{path: "†state.r", result: `{"y":`},
	} {
		o, err := ParseOutput(CallMeta{Tool: "t", OutputPath: tt.path, OutputMethod: tt.method, Instance: tt.instance})
		if err != nil {
			t.Fatal(tt.path, err)
		}
		call := json.RawMessage(`{"_tool":"t", "_outputPath":"` + tt.path + `"}`)
		want, _ := NewLog(base...)
		var wantErr error
		msgs, err := o.Messages(call, tt.instance, json.RawMessage(tt.result), tt.b, date)
		if err != nil {
			wantErr = err
		} else {
			wantErr = want.Append(msgs...)
		}
		got, _ := NewLog(base...)
		var kinds []string
		err = got.AppendOutput(o, call, tt.instance, json.RawMessage(tt.result), tt.b, date, func(k string) { kinds = append(kinds, k) })
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s %s: error %v, want %v", tt.path, tt.result, err, wantErr)
			continue
		}
		if g, w := got.Messages(), want.Messages(); !reflect.DeepEqual(g, w) {
			t.Errorf("%s %s: messages\n%+v\nwant\n%+v", tt.path, tt.result, g, w)
		}
		var wantKinds []string
		for _, m := range msgs {
			wantKinds = append(wantKinds, m.Kind)
		}
		if wantErr == nil && !reflect.DeepEqual(kinds, wantKinds) {
			t.Errorf("%s: kinds %v, want %v", tt.path, kinds, wantKinds)
		}
		for _, id := range []Identity{{Kind: "state"}, {Kind: "notes"}, {Kind: "state", Instance: "i1"}} {
			gv, gok, gerr := got.Value(id)
			wv, wok, werr := want.Value(id)
			if string(gv) != string(wv) || gok != wok || (gerr == nil) != (werr == nil) {
				t.Errorf("%s: Value(%v) = %s %v %v, want %s %v %v", tt.path, id, gv, gok, gerr, wv, wok, werr)
			}
		}
		for _, p := range []ref.Path{{"s", "t"}, {"r", "y"}, {"ok"}} {
			gv, gerr := got.Lookup("state", p)
			wv, werr := want.Lookup("state", p)
			if string(gv) != string(wv) || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Errorf("%s: Lookup(%v) = %s %v, want %s %v", tt.path, p, gv, gerr, wv, werr)
			}
		}
	}
}

func TestWrapLen(t *testing.T) {
	for _, path := range []ref.Path{nil, {"a"}, {"r0", "y"}, {"long_segment", "b", "c"}} {
		v := json.RawMessage(`{"y":1}`)
		if got, want := len(appendWrap(nil, path, v)), wrapLen(path, v); got != want {
			t.Errorf("%v: wrapped is %d bytes, wrapLen says %d", path, got, want)
		}
	}
}

// TestCompactIfNeeded checks that values with white space anywhere come
// out compact and that others come back as they are, at every length
// around the 8 bytes the scan reads at a time.
func TestCompactIfNeeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{`1`, `"a b"`, `"\u0001"`, `"é"`, `[`, `]`, `true`}
	for range 5000 {
		var b bytes.Buffer
		b.WriteByte('[')
		for k := range rng.IntN(8) {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pieces[rng.IntN(3)])
		}
		b.WriteByte(']')
		v := b.Bytes()
		if rng.IntN(2) == 0 { // white space at some place between tokens
			at := 1 + rng.IntN(len(v)-1)
			ws := []string{" ", "\t", "\n", "\r"}[rng.IntN(4)]
			v = append(v[:at:at], append([]byte(ws), v[at:]...)...)
		}
		if !json.Valid(v) {
			continue
		}
		var want bytes.Buffer
		_ = json.Compact(&want, v)
		got := compactIfNeeded(v)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compactIfNeeded(%q) = %q, want %q", v, got, want.Bytes())
		}
		spaced := bytes.ContainsAny(v, " \t\n\r")
		if same := len(got) > 0 && &got[0] == &v[0]; same == spaced {
			t.Fatalf("compactIfNeeded(%q): returned its input = %v", v, same)
		}
	}
}

// TestAppendOutputKeepsNoOutput parses every output into one store, as
// a loop that reuses its calls does, and writes over the store after each
// append: the log, its views (keyed, raw, materialised, with a clash) and
// the messages it gives back must be those of a log whose outputs had
// stores of their own.
func TestAppendOutputKeepsNoOutput(t *testing.T) {
	date := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	writes := []struct{ path, result string }{
		{"†state.a", `1`}, {"†state.b", `{"x":1}`}, // keyed
		{"†state.c.d", `2`}, {"†state.c.e.f", `3`}, {"†notes.n.m", `"x"`}, // raw
		{"†state.a.z", `4`},                                             // a clash: a is a number
		{"†state.g.h", `5`}, {"†state.g.i", `6`}, {"†state.j.k.l", `7`}, // materialised
		{"†notes.n.o", `8`}, {"†state.b.x", `9`},
	}
	reused, _ := NewLog(Text("go"))
	fresh, _ := NewLog(Text("go"))
	var store OutputStore
	for _, w := range writes {
		call := json.RawMessage(`{"_tool":"t","_outputPath":"` + w.path + `"}`)
		o, err := ParseOutputIn(CallMeta{Tool: "t", OutputPath: w.path}, &store)
		if err != nil {
			t.Fatal(err)
		}
		if err := reused.AppendOutput(o, call, "", json.RawMessage(w.result), Success, date, nil); err != nil {
			t.Fatal(w.path, err)
		}
		if _, err := ParseOutputIn(CallMeta{Tool: "t", OutputPath: "†zz.q0.q1.q2"}, &store); err != nil {
			t.Fatal(err)
		}
		o, _ = ParseOutput(CallMeta{Tool: "t", OutputPath: w.path})
		if err := fresh.AppendOutput(o, call, "", json.RawMessage(w.result), Success, date, nil); err != nil {
			t.Fatal(w.path, err)
		}
	}
	if g, w := reused.Messages(), fresh.Messages(); !reflect.DeepEqual(g, w) {
		t.Errorf("messages\n%+v\nwant\n%+v", g, w)
	}
	for _, kind := range []string{"state", "notes", "zz"} {
		gv, gok, gerr := reused.Value(Identity{Kind: kind})
		wv, wok, werr := fresh.Value(Identity{Kind: kind})
		if string(gv) != string(wv) || gok != wok || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("Value(%s) = %s %v %v, want %s %v %v", kind, gv, gok, gerr, wv, wok, werr)
		}
	}
	for _, p := range []ref.Path{{"a"}, {"a", "z"}, {"c", "e", "f"}, {"g"}, {"j", "k"}, {"b", "x"}, {"q0"}} {
		gv, gerr := reused.Lookup("state", p)
		wv, werr := fresh.Lookup("state", p)
		if string(gv) != string(wv) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("Lookup(%v) = %s %v, want %s %v", p, gv, gerr, wv, werr)
		}
	}
	// The messages given back append as they were.
	again, err := NewLog(reused.Messages()...)
	if err != nil {
		t.Fatal(err)
	}
	gv, _, _ := again.Value(Identity{Kind: "state"})
	wv, _, _ := fresh.Value(Identity{Kind: "state"})
	if string(gv) != string(wv) {
		t.Errorf("re-appended: %s, want %s", gv, wv)
	}
}

// TestParseOutputInDirtyStore: a store parsed into before, never cleared,
// gives the Output a fresh parse gives.
func TestParseOutputInDirtyStore(t *testing.T) {
	paths := []string{"", "†state.a", "†zz.q0.q1.q2", "†state", "†a.b || †c.d", "†a.b.c.d.e", "†state.x"}
	for _, before := range paths {
		for _, p := range paths {
			var store OutputStore
			if _, err := ParseOutputIn(CallMeta{Tool: "t", OutputPath: before, OutputMethod: "push"}, &store); err != nil {
				t.Fatal(before, err)
			}
			got, err := ParseOutputIn(CallMeta{Tool: "t", OutputPath: p}, &store)
			if err != nil {
				t.Fatal(p, err)
			}
			want, err := ParseOutput(CallMeta{Tool: "t", OutputPath: p})
			if err != nil {
				t.Fatal(p, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q after %q: %+v, want %+v", p, before, got, want)
			}
		}
	}
}
