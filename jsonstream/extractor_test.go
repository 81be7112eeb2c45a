package jsonstream

import (
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func el(index int, path, value string) Element {
	return Element{Index: index, Path: path, Value: json.RawMessage(value)}
}

func TestExtractor(t *testing.T) {
	solution := `{"calls": [ {"_tool":"search","q":"a \"b\""} , {"_tool":"fetch","urls":["x","y"]} ],` +
		` "output": {"items": [1, 2.5e1, "three", null, {"n": [4]}]}}`
	for _, tt := range []struct {
		name string
		in   string
		path string
		want []Element
	}{
		{"calls", solution, "calls", []Element{
			el(0, "calls.0", `{"_tool":"search","q":"a \"b\""}`),
			el(1, "calls.1", `{"_tool":"fetch","urls":["x","y"]}`),
		}},
		{"nested array", solution, "output.items", []Element{
			el(0, "output.items.0", `1`),
			el(1, "output.items.1", `2.5e1`),
			el(2, "output.items.2", `"three"`),
			el(3, "output.items.3", `null`),
			el(4, "output.items.4", `{"n": [4]}`),
		}},
		{"object at path", solution, "output", []Element{
			el(-1, "output", `{"items": [1, 2.5e1, "three", null, {"n": [4]}]}`),
		}},
		{"index segment", solution, "calls.1.urls", []Element{
			el(0, "calls.1.urls.0", `"x"`),
			el(1, "calls.1.urls.1", `"y"`),
		}},
		{"scalar at path", solution, "calls.0.q", []Element{el(-1, "calls.0.q", `"a \"b\""`)}},
		{"deep index", solution, "output.items.4.n.0", []Element{el(-1, "output.items.4.n.0", `4`)}},
		{"absent key", solution, "plan", nil},
		{"index past end", solution, "calls.2", nil},
		{"path through a scalar", solution, "calls.0.q.x", nil},
		{"non-canonical index", solution, "calls.01", nil},
		{"root", ` [1, {"a":2}] `, "", []Element{el(0, "0", `1`), el(1, "1", `{"a":2}`)}},
		{"root scalar", ` 42 `, "", []Element{el(-1, "", `42`)}},
		{"numeric key in object", `{"0":[true]}`, "0", []Element{el(0, "0.0", `true`)}},
		{"escaped key", `{"c\u0061lls":[1]}`, "calls", []Element{el(0, "calls.0", `1`)}},
		{"empty array", `{"calls":[]}`, "calls", nil},
		{"duplicate key", `{"calls":[1],"calls":[2]}`, "calls", []Element{el(0, "calls.0", `1`), el(0, "calls.0", `2`)}},
		{"fenced", "```json\n{\"calls\":[{\"_tool\":\"a\"}]}\n```\n", "calls", []Element{el(0, "calls.0", `{"_tool":"a"}`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunks := range chunkings([]byte(tt.in)) {
				got := extract(t, tt.path, chunks)
				if got.Err != nil {
					t.Fatalf("chunks %q: %v", chunks, got.Err)
				}
				if diff := cmp.Diff(got.Elements, tt.want); diff != "" {
					t.Fatalf("chunks %q (-got +want):\n%s", chunks, diff)
				}
			}
		})
	}
}

// TestExtractorEarly checks that each call is handed over as soon as its
// closing byte has been fed, before the rest of the solution exists.
func TestExtractorEarly(t *testing.T) {
	x, err := NewExtractor("calls")
	if err != nil {
		t.Fatal(err)
	}
	feed := func(s string) []Element {
		t.Helper()
		els, err := x.Feed([]byte(s))
		if err != nil {
			t.Fatalf("Feed(%q): %v", s, err)
		}
		return els
	}
	if els := feed(`{"calls":[{"_tool":"a","q":"x"`); len(els) != 0 {
		t.Fatalf("got %v before the first call was complete", els)
	}
	got := feed(`},`)
	if diff := cmp.Diff(got, []Element{el(0, "calls.0", `{"_tool":"a","q":"x"}`)}); diff != "" {
		t.Fatalf("after the first call and its comma (-got +want):\n%s", diff)
	}
	if els := feed(`{"_tool":"b"`); len(els) != 0 {
		t.Fatalf("got %v before the second call was complete", els)
	}
	got = feed(`}`) // no comma needed: the closing brace ends it
	if diff := cmp.Diff(got, []Element{el(1, "calls.1", `{"_tool":"b"}`)}); diff != "" {
		t.Fatalf("after the second call (-got +want):\n%s", diff)
	}
	// A number ends only at the byte after it.
	if els := feed(`,12`); len(els) != 0 {
		t.Fatalf("got %v before the number was known to be complete", els)
	}
	got = feed(`]`)
	if diff := cmp.Diff(got, []Element{el(2, "calls.2", `12`)}); diff != "" {
		t.Fatalf("after the number (-got +want):\n%s", diff)
	}
	// The input is cut: the elements stand, End reports the cut.
	els, err := x.End()
	if len(els) != 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("End() = %v, %v; want nothing and io.ErrUnexpectedEOF", els, err)
	}
}

// TestExtractorOwnership checks that every Element owns its memory. The
// caller here, extract (which every Extractor test and FuzzStreamParse go
// through), reads each chunk into one buffer and overwrites it after
// Feed, and overwrites every byte of each element's Value and Path as
// soon as it has them; the elements that follow and the final result must
// still be those of encoding/json, and each element must keep what was
// written into it. A Path that were the caller's path string ("output"
// below, with Index -1) would lie in read-only memory and crash.
func TestExtractorOwnership(t *testing.T) {
	data := solution(8 << 10)
	for _, path := range []string{"calls", "calls.3", "calls.3.options.tags", "output", "output.note", ""} {
		_, wantEls, _ := want(t, data, path)
		for _, size := range []int{1, 7, 100, len(data)} {
			var chunks [][]byte
			for off := 0; off < len(data); off += size {
				chunks = append(chunks, data[off:min(off+size, len(data))])
			}
			got := extract(t, path, chunks)
			if got.Err != nil {
				t.Fatalf("path %q, chunks of %d: %v", path, size, got.Err)
			}
			if diff := cmp.Diff(compacted(t, got.Elements), wantEls); diff != "" {
				t.Fatalf("path %q, chunks of %d (-got +want):\n%s", path, size, diff)
			}
		}
	}
	// Paths of one byte: string([]byte) would return runtime memory that
	// every such conversion shares, so the second run would see the
	// first one's marks, if the runtime survived them.
	for range 2 {
		got := extract(t, "", [][]byte{[]byte(`[1,2,[3],4]`)})
		if diff := cmp.Diff(got.Elements, []Element{el(0, "0", "1"), el(1, "1", "2"), el(2, "2", "[3]"), el(3, "3", "4")}); diff != "" {
			t.Fatalf("(-got +want):\n%s", diff)
		}
	}
}

// TestExtractorMemory checks that an Extractor keeps only the bytes of the
// element being captured, not the input.
func TestExtractorMemory(t *testing.T) {
	data := solution(1 << 20)
	x, _ := NewExtractor("calls")
	for off := 0; off < len(data); off += 12 {
		els, err := x.Feed(data[off:min(off+12, len(data))])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range els {
			if len(e.Value) > 512 {
				t.Fatalf("element of %d bytes; the test assumes at most 512", len(e.Value))
			}
		}
		if cap(x.buf) > 1024 || cap(x.s.keys) > 256 || cap(x.s.stack) > 16 {
			t.Fatalf("at offset %d of %d: buffers of %d, %d and %d bytes", off, len(data), cap(x.buf), cap(x.s.keys), cap(x.s.stack))
		}
	}
	if _, err := x.End(); err != nil {
		t.Fatal(err)
	}
}

// TestExtractorLinear feeds a long string one byte at a time; a scanner that
// rescanned the element for every chunk would take minutes.
func TestExtractorLinear(t *testing.T) {
	const n = 1 << 20
	data := []byte(`{"calls":["` + strings.Repeat(`ab\"`, n/4) + `"]}`)
	x, _ := NewExtractor("calls")
	var got []Element
	for i := range data {
		els, err := x.Feed(data[i : i+1])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, els...)
	}
	if _, err := x.End(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Value) != n+2 {
		t.Fatalf("got %d elements", len(got))
	}
}

func TestExtractorErrors(t *testing.T) {
	x, _ := NewExtractor("calls")
	els, err := x.Feed([]byte(`{"calls":[1,2,x]}`))
	if diff := cmp.Diff(els, []Element{el(0, "calls.0", "1"), el(1, "calls.1", "2")}); diff != "" {
		t.Errorf("elements before the error (-got +want):\n%s", diff)
	}
	want := &SyntaxError{Offset: 14, Path: "calls.2", Msg: "invalid character 'x' looking for beginning of value"}
	if diff := cmp.Diff(err, error(want), errorsEqual); diff != "" {
		t.Fatalf("error (-got +want):\n%s", diff)
	}
	if _, err2 := x.Feed([]byte(`]`)); err2 != err {
		t.Errorf("second Feed: %v, want the same error", err2)
	}
	if _, err2 := x.End(); err2 != err {
		t.Errorf("End: %v, want the same error", err2)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Feed after End did not panic")
			}
		}()
		x.Feed(nil)
	}()
}

func TestNewExtractorInvalidPath(t *testing.T) {
	for _, path := range []string{".", "calls.", ".calls", "a..b"} {
		if _, err := NewExtractor(path); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("NewExtractor(%q) error = %v, want ErrInvalidPath", path, err)
		}
	}
}

// chunksOf returns a sequence of the strings as chunks that counts how many
// it handed out, and ends with err if it is not nil.
func chunksOf(pulled *int, err error, chunks ...string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for _, c := range chunks {
			*pulled++
			if !yield([]byte(c), nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func TestElements(t *testing.T) {
	errNetwork := errors.New("network down")
	for _, tt := range []struct {
		name   string
		path   string
		chunks []string
		err    error // from the chunk sequence
		stop   int   // break after this many items, 0 for never
		want   []Element
		pulled int // chunks pulled
		werr   string
	}{
		{
			name:   "all",
			path:   "calls",
			chunks: []string{`{"calls":[{"a"`, `:1},{"b":2}`, `,3]}`},
			want:   []Element{el(0, "calls.0", `{"a":1}`), el(1, "calls.1", `{"b":2}`), el(2, "calls.2", `3`)},
			pulled: 3,
		},
		{
			name:   "break",
			path:   "calls",
			chunks: []string{`{"calls":[{"a"`, `:1},{"b":2}`, `,3]}`},
			stop:   1,
			want:   []Element{el(0, "calls.0", `{"a":1}`)},
			pulled: 2, // the third chunk is never read
		},
		{
			name:   "chunk error",
			path:   "calls",
			chunks: []string{`{"calls":[1,`},
			err:    errNetwork,
			want:   []Element{el(0, "calls.0", `1`)},
			pulled: 1,
			werr:   "network down",
		},
		{
			name:   "syntax error",
			path:   "calls",
			chunks: []string{`{"calls":[1,`, `}`, `]}`},
			want:   []Element{el(0, "calls.0", `1`)},
			pulled: 2,
			werr:   `jsonstream: offset 12, path "calls.1": invalid character '}' looking for beginning of value`,
		},
		{
			name:   "cut",
			path:   "calls",
			chunks: []string{`{"calls":[1,2`},
			want:   []Element{el(0, "calls.0", `1`)},
			pulled: 1,
			werr:   `jsonstream: offset 13, path "calls.1": unexpected end of JSON input`,
		},
		{
			name:   "number at the end",
			path:   "",
			chunks: []string{`12`, `34`},
			want:   []Element{el(-1, "", `1234`)},
			pulled: 2,
		},
		{
			name:   "bad path",
			path:   "calls.",
			chunks: []string{`{}`},
			werr:   `jsonstream: invalid path "calls.": empty segment`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pulled := 0
			var got []Element
			var gotErr error
			n := 0
			for e, err := range Elements(tt.path, chunksOf(&pulled, tt.err, tt.chunks...)) {
				if gotErr != nil {
					t.Fatalf("item after the error: %v, %v", e, err)
				}
				if err != nil {
					gotErr = err
					continue
				}
				got = append(got, e)
				if n++; n == tt.stop {
					break
				}
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("elements (-got +want):\n%s", diff)
			}
			if pulled != tt.pulled {
				t.Errorf("pulled %d chunks, want %d", pulled, tt.pulled)
			}
			errText := ""
			if gotErr != nil {
				errText = gotErr.Error()
			}
			if errText != tt.werr {
				t.Errorf("error %q, want %q", errText, tt.werr)
			}
			if tt.err != nil && !errors.Is(gotErr, tt.err) {
				t.Errorf("error %v does not wrap %v", gotErr, tt.err)
			}
		})
	}
}
