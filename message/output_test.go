package message

import (
	"bytes"
	"encoding/json"
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
