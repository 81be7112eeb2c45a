package schema

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

type pathCounts struct {
	Count map[string]int8            `json:"count,omitempty"`
	List  []int8                     `json:"list,omitempty"`
	Nest  map[string]pathCountsInner `json:"nest,omitempty"`
	Grid  [][]int8                   `json:"grid,omitempty"`
	Small int8                       `json:"small,omitempty"`
}

type pathCountsInner struct {
	X int8 `json:"x"`
}

// TestDecodeErrorPath: a value that conforms but does not decode (1.0
// for an int8) is named by its exact place, the map key or the array
// index included; encoding/json names only the struct fields on the way.
func TestDecodeErrorPath(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"map value", `{"count":{"a":1,"b/c":1.0}}`, "/count/b~1c"},
		{"array element", `{"list":[1, 2, 1.0]}`, "/list/2"},
		{"field of a map value", `{"nest":{"k":{"x":1.0}}}`, "/nest/k/x"},
		{"nested arrays", `{"grid":[[1],[2,1.0]]}`, "/grid/1/1"},
		{"after other members", `{"list":[1],"count":{"a":1},"small":1.0}`, "/small"},
		{"key with escapes", `{"count":{"\u0041\"":1.0}}`, `/count/A"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode[pathCounts](json.RawMessage(tt.in))
			de, ok := errors.AsType[*DecodeError](err)
			if !ok {
				t.Fatalf("got %v, want a *DecodeError", err)
			}
			if de.InstancePath != tt.want {
				t.Errorf("InstancePath %q, want %q (%v)", de.InstancePath, tt.want, err)
			}
		})
	}
}

// TestPointerAt: the first byte of an object or array, any byte of a
// scalar, and the first byte of a key are placed; no offset panics.
func TestPointerAt(t *testing.T) {
	doc := []byte(`{"a": [1, {"b~": "x"}], "c" : {}, "d":[]}`)
	want := map[int64]string{
		0:  "",         // {
		6:  "/a",       // [
		7:  "/a/0",     // 1
		10: "/a/1",     // {
		11: "/a/1/b~0", // the key "b~"
		18: "/a/1/b~0", // "x"
		30: "/c",       // {
		38: "/d",       // [
	}
	for off := int64(-1); off <= int64(len(doc)); off++ {
		got, ok := pointerAt(doc, off) // never panics
		if w, is := want[off]; is && (!ok || got != w) {
			t.Errorf("pointerAt(%d) = %q, %v; want %q", off, got, ok, w)
		}
	}
	if got, ok := pointerAt([]byte(` 1.0`), 3); !ok || got != "" {
		t.Errorf("a scalar document: %q, %v; want the root", got, ok)
	}
}

// FuzzPointerAt: at every offset of a JSON document, pointerAt does not
// panic, and a pointer it gives names a value of the document.
func FuzzPointerAt(f *testing.F) {
	for _, s := range []string{`{"a": [1, {"b~": "x"}], "c" : {}, "d":[]}`, `[[1],[2,1.0]]`, `{"\u0041\"":{"x/y":[null,true]}}`, ` 1.0 `, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var root any
		if json.Unmarshal([]byte(doc), &root) != nil || duplicateKeys(doc) {
			return // a later member of the same key hides the earlier one
		}
		for off := int64(-1); off <= int64(len(doc)); off++ {
			p, ok := pointerAt([]byte(doc), off)
			if !ok {
				continue
			}
			if !resolves(root, p) {
				t.Fatalf("pointerAt(%q, %d) = %q, which names no value", doc, off, p)
			}
		}
	})
}

// resolves reports whether the JSON pointer p names a value of v.
func resolves(v any, p string) bool {
	if p == "" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = c[tok]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	return true
}

// duplicateKeys reports whether an object of the JSON document doc has a
// key twice.
func duplicateKeys(doc string) bool {
	dec := json.NewDecoder(strings.NewReader(doc))
	type frame struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if top != nil && top.keys != nil {
				top.wantKey = true
			}
			f := &frame{}
			if tok == json.Delim('{') {
				f.keys, f.wantKey = map[string]bool{}, true
			}
			stack = append(stack, f)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.keys != nil {
			if top.wantKey {
				k := tok.(string)
				if top.keys[k] {
					return true
				}
				top.keys[k], top.wantKey = true, false
			} else {
				top.wantKey = true
			}
		}
	}
}
