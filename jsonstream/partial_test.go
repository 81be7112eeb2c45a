package jsonstream

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestValueExtractorPartial feeds documents in chunks of every size and
// checks that Partial only ever grows, is a prefix of the value, and that
// the value handed over at the end is the value at the path, whole.
func TestValueExtractorPartial(t *testing.T) {
	docs := []struct{ doc, path, want string }{
		{`{"calls":[],"output":"héllo \"wörld\" \u00e9"}`, "output", `"héllo \"wörld\" \u00e9"`},
		{`{"output":[1,{"a":[2,3]},"x"],"z":1}`, "output", `[1,{"a":[2,3]},"x"]`},
		{`{"output":{"items":[{"n":1},{"n":2}]}}`, "output.items", `[{"n":1},{"n":2}]`},
		{` {"a":1 , "output" : 12.5e3 }`, "output", `12.5e3`},
		{`{"output":null}`, "output", `null`},
		{`[1,2,3]`, "", `[1,2,3]`},
		{`7`, "", `7`},
	}
	for _, d := range docs {
		for size := 1; size <= len(d.doc); size++ {
			x, err := NewValueExtractor(d.path)
			if err != nil {
				t.Fatal(err)
			}
			var seen []byte
			var got []Element
			check := func(els []Element) {
				got = append(got, els...)
				p := x.Partial()
				if p == nil {
					return
				}
				if len(p) < len(seen) || !bytes.HasPrefix(p, seen) {
					t.Fatalf("%s, chunks of %d: partial %q does not extend %q", d.doc, size, p, seen)
				}
				if !bytes.HasPrefix([]byte(d.want), p) {
					t.Fatalf("%s, chunks of %d: partial %q is not a prefix of %q", d.doc, size, p, d.want)
				}
				seen = append(seen[:0], p...)
			}
			for i := 0; i < len(d.doc); i += size {
				els, err := x.Feed([]byte(d.doc[i:min(i+size, len(d.doc))]))
				if err != nil {
					t.Fatalf("%s: %v", d.doc, err)
				}
				check(els)
			}
			els, err := x.End()
			if err != nil {
				t.Fatalf("%s: %v", d.doc, err)
			}
			check(els)
			if len(got) != 1 || got[0].Index != -1 || string(got[0].Value) != d.want || got[0].Path != d.path {
				t.Fatalf("%s, chunks of %d: got %+v, want one element %s", d.doc, size, got, d.want)
			}
			if x.Partial() != nil {
				t.Fatalf("%s: Partial after the value ended: %q", d.doc, x.Partial())
			}
		}
	}
}

// TestValueExtractorArray checks that an ordinary Extractor still hands
// over the elements of an array where a value Extractor hands it whole.
func TestValueExtractorArray(t *testing.T) {
	doc := []byte(`{"output":[{"a":1},2]}`)
	x, _ := NewExtractor("output")
	els, _ := x.Feed(doc)
	if len(els) != 2 {
		t.Fatalf("Extractor: %d elements, want 2", len(els))
	}
	v, _ := NewValueExtractor("output")
	els, _ = v.Feed(doc)
	if len(els) != 1 || !json.Valid(els[0].Value) || string(els[0].Value) != `[{"a":1},2]` {
		t.Fatalf("value Extractor: %+v", els)
	}
}
