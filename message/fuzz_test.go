package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

var (
	fuzzKinds     = []string{"state", "input"}
	fuzzInstances = []string{"", "a", "b"}
	fuzzPaths     = []string{"", "x", "x.y", "x.y.z", "x.0", "x.1", "y", "y.0.z", "items", "items.0"}
	fuzzMethods   = []ref.Method{"", ref.MethodSet, ref.MethodMerge, ref.MethodAssign, ref.MethodPush, ref.MethodConcat}
	fuzzValues    = []string{`{}`, `{"y":1}`, `{"y":{"z":2}}`, `[1]`, `[{"z":3}]`, `"s"`, `7`, `null`, `{"0":1}`,
		`{"x":{"y":[1,2]}}`, `{"items":[]}`, `[]`, `{"x":[{"y":1}],"y":[{"z":0}]}`, `true`}
)

// fuzzLog turns bytes into a context of data writes: five bytes a message.
func fuzzLog(data []byte) []Message {
	var msgs []Message
	for len(data) >= 5 {
		b := data[:5]
		data = data[5:]
		kind := fuzzKinds[int(b[0])%len(fuzzKinds)]
		inst := fuzzInstances[int(b[0]/2)%len(fuzzInstances)]
		path := fuzzPaths[int(b[1])%len(fuzzPaths)]
		method := fuzzMethods[int(b[2])%len(fuzzMethods)]
		value := json.RawMessage(fuzzValues[int(b[3])%len(fuzzValues)])
		m := Message{Type: TypeData, Kind: kind, Instance: inst}
		if b[4]%4 == 0 || path == "" && method == "" {
			// A plain data message: a merge at the root (or the method given).
			m.Data, m.Method = value, method
			if method == ref.MethodSet { // set at the root needs a path to say so
				m.OutputPath = ref.Dagger + kind
			}
		} else {
			p, _ := ref.ParsePath(path)
			m.Data, m.Method, m.OutputPath = wrapRaw(p, value), method, ref.Ref{Kind: kind, Path: p}.String()
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// FuzzResolve checks that the indexed Log agrees with the naive scan on
// random logs of writes with every method, with and without instances.
func FuzzResolve(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x01\x01\x00\x02\x04\x05\x01"))
	f.Add([]byte("\x00\x00\x00\x0a\x00\x00\x03\x04\x05\x01\x00\x01\x01\x02\x01\x02\x07\x05\x03\x02"))
	f.Add([]byte("\x02\x08\x04\x04\x01\x02\x08\x05\x03\x01\x04\x09\x01\x06\x01\x00\x00\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := fuzzLog(data)
		log, err := NewLog(msgs...)
		if err != nil {
			t.Fatalf("NewLog: %v", err)
		}
		// Also build it one message at a time and compare at every step
		// for short logs, to exercise incremental maintenance.
		step := &Log{}
		for i, m := range msgs {
			if err := step.Append(m); err != nil {
				t.Fatalf("Append %d: %v", i, err)
			}
			if len(msgs) <= 12 || i == len(msgs)-1 {
				compareAll(t, step, msgs[:i+1])
			}
		}
		compareAll(t, log, msgs)
	})
}

func compareAll(t *testing.T, log *Log, msgs []Message) {
	t.Helper()
	for _, inst := range append(fuzzInstances, "c") {
		var src ref.Source = log
		if inst != "" {
			src = log.Instance(inst)
		}
		oracle := naive{msgs: msgs, instance: inst}
		for _, kind := range append(fuzzKinds, "nope") {
			for _, ps := range append(fuzzPaths, "x.y.z.w", "items.1", "q") {
				p, _ := ref.ParsePath(ps)
				got, gerr := src.Lookup(kind, p)
				want, werr := oracle.Lookup(kind, p)
				if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || string(got) != string(want) {
					t.Fatalf("instance %q †%s.%s:\nindex %s, %v\nnaive %s, %v\nlog: %s", inst, kind, ps, got, gerr, want, werr, dump(msgs))
				}
				if gerr != nil {
					var re *ref.Error
					if !errors.As(gerr, &re) {
						t.Fatalf("error %v is not a *ref.Error", gerr)
					}
				}
			}
		}
	}
}

func dump(msgs []Message) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

// TestTopLevelSets checks an identity written by many sets at top-level
// keys against the naive scan, as a run's results write its state: with
// values and keys written in any spelling, and with a merge at the root
// among them.
func TestTopLevelSets(t *testing.T) {
	const keys = 70
	values := []string{`{"a":1}`, `{"b":1,"a":[2,{"c":3}]}`, `[1, 2]`, `"é"`, `null`, `7`, `{"a":{"b":"x"}}`, `{"\u0061":1}`, `[]`}
	var msgs []Message
	var paths []string
	for i := range keys + 6 {
		key := fmt.Sprintf("k%d", (i*7)%(keys+3))
		if i%9 == 5 { // from the sixth write on, a key the encoder writes
			key = "é" + key
		}
		p := ref.Path{key}
		msgs = append(msgs, Message{Type: TypeData, Kind: "state", Data: wrapRaw(p, json.RawMessage(values[i%len(values)])),
			OutputPath: ref.Ref{Kind: "state", Path: p}.String()})
		paths = append(paths, key, key+".a", key+".a.1.c", key+".b", key+".0", key+".a.b")
	}
	paths = append(paths, "", "nope", "nope.a")
	check := func(n int) {
		t.Helper()
		log, err := NewLog(msgs[:n]...)
		if err != nil {
			t.Fatal(err)
		}
		oracle := naive{msgs: msgs[:n]}
		for _, ps := range paths {
			p, _ := ref.ParsePath(ps)
			got, gerr := log.Lookup("state", p)
			want, werr := oracle.Lookup("state", p)
			if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || string(got) != string(want) {
				t.Fatalf("%d writes, †state.%s:\nindex %s, %v\nnaive %s, %v", n, ps, got, gerr, want, werr)
			}
		}
		v, ok, err := log.Value(Identity{Kind: "state"})
		want, werr := oracle.Lookup("state", nil)
		if !ok || err != nil || werr != nil || string(v) != string(want) {
			t.Fatalf("%d writes: value %s %v %v, naive %s %v", n, v, ok, err, want, werr)
		}
	}
	for _, n := range []int{1, 2, 4, 5, keys - 1, keys, keys + 1, len(msgs)} {
		check(n)
	}
	// A merge at the root, early or late.
	merge := Message{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"k1":{"m":1},"new":2}`)}
	paths = append(paths, "k1.m", "new")
	sets := msgs
	for _, n := range []int{1, 2, 4, keys} {
		msgs = slices.Insert(slices.Clone(sets), n, merge)
		check(len(msgs))
	}
}

// TestCheckTopLevelSets checks Check and a replaced key on an identity
// written by sets at top-level keys.
func TestCheckTopLevelSets(t *testing.T) {
	out := func(path, method, value string) Message {
		ms, err := Outputs(json.RawMessage(`{"_tool":"t","_outputMethod":"`+method+`","_outputPath":"`+path+`"}`), json.RawMessage(value), Success, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return ms[0]
	}
	log, err := NewLog(out("†state.a", "set", `{"x":1}`), out("†state.b", "set", `[1]`), out("†state.a", "set", `"s"`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := log.Value(Identity{Kind: "state"}); err != nil || string(v) != `{"a":"s","b":[1]}` {
		t.Errorf("value %s, %v", v, err)
	}
	if err := log.Check(out("†state.a", "push", `1`)); !errors.Is(err, ref.ErrTypeClash) {
		t.Errorf("push onto a string: got %v, want a type clash", err)
	}
	if err := log.Check(out("†state.b", "push", `1`)); err != nil {
		t.Errorf("push onto an array: %v", err)
	}
	if err := log.Check(out("†state.c.d", "set", `1`)); err != nil {
		t.Errorf("set at a new key: %v", err)
	}
}

// TestCheckAll checks CheckAll against appending the messages one by one,
// each checked first, and that it leaves the log as it was: two or three
// writes to an identity (absent, or set to each value first), at related
// and unrelated paths.
func TestCheckAll(t *testing.T) {
	out := func(path string, method ref.Method, value string) Message {
		p := "†state"
		if path != "" {
			p += "." + path
		}
		ms, err := Outputs(json.RawMessage(`{"_tool":"t","_outputMethod":"`+string(method)+`","_outputPath":"`+p+`"}`), json.RawMessage(value), Success, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return ms[0]
	}
	n := 0
	for _, pre := range append([]string{"absent"}, fuzzValues...) {
		for _, p1 := range fuzzPaths {
			for _, v1 := range fuzzValues {
				for _, p2 := range []string{"", "x", "x.y", "x.0", "y"} {
					for _, m2 := range []ref.Method{ref.MethodSet, ref.MethodPush, ref.MethodMerge} {
						for _, p3 := range []string{"none", "", "x.y", "y.0", "z"} {
							msgs := []Message{out(p1, ref.MethodSet, v1), out(p2, m2, `{"z":1}`)}
							if p3 != "none" {
								msgs = append(msgs, out(p3, ref.MethodPush, `1`))
							}
							log, err := NewLog()
							if pre != "absent" {
								log, err = NewLog(out("", ref.MethodSet, pre))
							}
							if err != nil {
								continue
							}
							before, _, _ := log.Value(Identity{Kind: "state"})
							size := log.Len()
							i, err := log.CheckAll(msgs...)
							if after, _, _ := log.Value(Identity{Kind: "state"}); string(after) != string(before) || log.Len() != size {
								t.Fatalf("pre %s, %+v: CheckAll changed the log: %s", pre, msgs, after)
							}
							want, werr := -1, error(nil)
							for j, m := range msgs {
								if werr = log.Check(m); werr != nil {
									want = j
									break
								}
								_ = log.Append(m)
							}
							if i != want || (err == nil) != (werr == nil) {
								t.Fatalf("pre %s, %+v: CheckAll = %d, %v; one by one %d, %v", pre, msgs, i, err, want, werr)
							}
							n++
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("nothing checked")
	}
}

// FuzzUnquote: unquote decodes every JSON value as json.Unmarshal does,
// its fast path included.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"tab\there"`, `"\u00e9t\u00e9"`, `"été"`, "\"\xff\"", `""`, `7`, `null`, `["a"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return // fields hold valid JSON only
		}
		var got, want string
		gerr, werr := unquote(json.RawMessage(s), &got), json.Unmarshal([]byte(s), &want)
		if (gerr == nil) != (werr == nil) || got != want {
			t.Errorf("unquote(%s) = %q, %v; json.Unmarshal: %q, %v", s, got, gerr, want, werr)
		}
	})
}
