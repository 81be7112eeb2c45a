package schema

import (
	"encoding/json"
	"errors"
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
