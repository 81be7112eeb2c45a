package message

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

// TestOutputs checks the data and date of output messages, and that each
// message's bytes are its own: writing over one changes no other.
func TestOutputs(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", 200) + `"}`
	for _, tt := range []struct {
		path, result string
		date         time.Time
		data         []string
		stamp        string
	}{
		{"†state.r0", `{"y":1}`, time.Date(2025, 10, 26, 12, 0, 0, 123456789, time.UTC),
			[]string{`{"r0":{"y":1}}`}, "2025-10-26T12:00:00.123456789Z"},
		{"†state", `{"y":1}`, time.Unix(0, 0), []string{`{"y":1}`}, "1970-01-01T00:00:00Z"},
		{"†state.a.b", `{ "y" : [1, 2] }`, time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
			[]string{`{"a":{"b":{"y":[1,2]}}}`}, "2025-01-02T02:04:05Z"},
		{"†state.a && †input.b.c", `7`, time.Unix(1, 5e8), []string{`{"a":7}`, `{"b":{"c":7}}`}, "1970-01-01T00:00:01.5Z"},
		{"†state && †input", `[1]`, time.Unix(1, 120), []string{`[1]`, `[1]`}, "1970-01-01T00:00:01.00000012Z"},
		{"†state.é.ü", `"s"`, time.Unix(1, 0), []string{`{"é":{"ü":"s"}}`}, "1970-01-01T00:00:01Z"},
		{"†state.r0 && †state.r1", big, time.Unix(1, 0), []string{`{"r0":` + big + `}`, `{"r1":` + big + `}`}, "1970-01-01T00:00:01Z"},
		{"†state.r0", `1`, time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), []string{`{"r0":1}`}, "12345-01-01T00:00:00Z"},
		{"†state.r0", `1`, time.Date(-1, 1, 1, 0, 0, 0, 5, time.UTC), []string{`{"r0":1}`}, "-0001-01-01T00:00:00.000000005Z"},
		{"†state.r0", `1`, time.Time{}, []string{`{"r0":1}`}, "0001-01-01T00:00:00Z"},
	} {
		call := json.RawMessage(`{"_tool":"t", "_outputPath":` + string(quote(tt.path)) + `}`)
		ms, err := Outputs(call, json.RawMessage(tt.result), Success, tt.date)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if len(ms) != len(tt.data) {
			t.Fatalf("%s: %d messages, want %d", tt.path, len(ms), len(tt.data))
		}
		for i, m := range ms {
			if string(m.Data) != tt.data[i] || m.Date != tt.stamp || string(m.Call) != string(compact(call)) {
				t.Errorf("%s: message %d has data %s, date %q, call %s; want %s, %q", tt.path, i, m.Data, m.Date, m.Call, tt.data[i], tt.stamp)
			}
		}
		for i := range ms {
			for _, b := range [][]byte{ms[i].Data, ms[i].Call} {
				for j := range b {
					b[j] = 'z'
				}
			}
			for k := i + 1; k < len(ms); k++ {
				if string(ms[k].Data) != tt.data[k] || string(ms[k].Call) != string(compact(call)) {
					t.Errorf("%s: message %d changed by a write to message %d", tt.path, k, i)
				}
			}
		}
		if string(call) != `{"_tool":"t", "_outputPath":`+string(quote(tt.path))+`}` {
			t.Errorf("%s: the call changed", tt.path)
		}
	}
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// TestParseOutput checks ParseOutput against ref.Parse and ref.ParseMethod.
func TestParseOutput(t *testing.T) {
	for _, s := range []string{"†state", "†state.a", "†s-t_1.a.b.c.d", " †state.a ", "†state.a~!@#$%^*()+=[]{}<>?/,;:'`", "†a.b || †c && †d.e"} {
		o, err := ParseOutput(CallMeta{OutputPath: s, OutputMethod: "push"})
		if err != nil {
			t.Fatal(err)
		}
		e, err := ref.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.Path, e) || o.Method != ref.MethodPush {
			t.Errorf("%q: got %#v %q, want %#v", s, o.Path, o.Method, e)
		}
	}
	if o, err := ParseOutput(CallMeta{OutputPath: "†state.a"}); err != nil || o.Method != ref.MethodSet {
		t.Errorf("no method: got %v, %v; want set", o, err)
	}
	if _, err := ParseOutput(CallMeta{OutputPath: "†state.a", OutputMethod: "nope"}); err == nil {
		t.Error("an unknown method was accepted")
	}
	if o, err := ParseOutput(CallMeta{}); err != nil || len(o.Path.Alts) != 0 {
		t.Errorf("no output path: got %+v, %v", o, err)
	}
}

// TestOutputBranches checks which targets each Branch writes, and the
// errors of a bad branch or result.
func TestOutputBranches(t *testing.T) {
	o, err := ParseOutput(CallMeta{OutputPath: "†state.ok || †state.err && †notes.err"})
	if err != nil {
		t.Fatal(err)
	}
	call := json.RawMessage(`{"_tool":"t"}`)
	for _, tt := range []struct {
		b     Branch
		paths []string
		err   string
	}{
		{b: Success, paths: []string{"†state.ok"}},
		{b: 1, paths: []string{"†state.err", "†notes.err"}},
		{b: Failure, paths: []string{"†state.err", "†notes.err"}},
		{b: 2, err: `message: branch 2 of "†state.ok || †state.err && †notes.err", which has 2`},
		{b: -2, err: `message: branch -2 of "†state.ok || †state.err && †notes.err", which has 2`},
	} {
		ms, err := o.Messages(call, "", json.RawMessage(`1`), tt.b, time.Unix(0, 0))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("branch %d: got %v, want %q", tt.b, err, tt.err)
			}
			continue
		}
		var paths []string
		for _, m := range ms {
			paths = append(paths, m.OutputPath)
		}
		if err != nil || !reflect.DeepEqual(paths, tt.paths) {
			t.Errorf("branch %d: got %v, %v; want %v", tt.b, paths, err, tt.paths)
		}
	}
	single, _ := ParseOutput(CallMeta{OutputPath: "†state.r"})
	if ms, err := single.Messages(call, "", json.RawMessage(`1`), Failure, time.Unix(0, 0)); ms != nil || err != nil {
		t.Errorf("failure of a single path: got %v, %v; want nothing", ms, err)
	}
	if _, err := single.Messages(call, "", json.RawMessage(`{"y":`), Success, time.Unix(0, 0)); err == nil {
		t.Error("an invalid result was accepted")
	}
	if ms, err := (&Output{}).Messages(call, "", json.RawMessage(`{"y":`), Success, time.Unix(0, 0)); ms != nil || err != nil {
		t.Errorf("no output path: got %v, %v; want nothing", ms, err)
	}
}

// FuzzParseOutput checks that the messages of an output name their
// targets in canonical spelling, however the output path is written, and
// that a log reads back the value each of them writes.
func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"†state.r0", " †state.r0", "†state.r0 ", "†state", "†state.a.b.0", "†state.a || †state.b",
		"†state.a && †input.b", "†state.a\t", "†state.é.x", "†state..a", "state.a",
		"†state.a.b.c.d", "†state.a.b.c.d.e", "†state.a|b", "†state.a.", "†", "†.a", "†state.a~b", `†state.a"b`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // no output
		}
		o, err := ParseOutput(CallMeta{OutputPath: s})
		e, werr := ref.Parse(s)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseOutput(%q) error %v, ref.Parse %v", s, err, werr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(o.Path, e) {
			t.Fatalf("ParseOutput(%q) path %#v, ref.Parse %#v", s, o.Path, e)
		}
		ms, err := o.Messages(json.RawMessage(`{}`), "", json.RawMessage(`{"v":1}`), Success, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range e.Alts[0] {
			if got, want := ms[i].OutputPath, r.String(); got != want {
				t.Fatalf("ParseOutput(%q) target %d = %q, want %q", s, i, got, want)
			}
			log, err := NewLog(ms[i])
			if err != nil {
				t.Fatalf("%q: message %d does not load: %v", s, i, err)
			}
			if v, err := log.Lookup(r.Kind, append(slices.Clone(r.Path), "v")); err != nil || !bytes.Equal(v, []byte("1")) {
				t.Fatalf("%q: message %d reads back %s, %v", s, i, v, err)
			}
		}
	})
}

// TestDeepOutputPath checks an output path of thousands of segments: the
// log and the parser read the value it writes in one pass over the data.
func TestDeepOutputPath(t *testing.T) {
	path := ref.Path(slices.Repeat([]string{"a"}, 3000))
	call := json.RawMessage(`{"_tool":"t","_outputPath":"†state.` + path.String() + `"}`)
	ms, err := Outputs(call, json.RawMessage(`{"v":1}`), Success, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseContext(b)
	if err != nil {
		t.Fatal(err)
	}
	log, err := NewLog(parsed...)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := log.Lookup("state", append(path, "v")); err != nil || string(v) != "1" {
		t.Errorf("got %s, %v; want 1", v, err)
	}
}
