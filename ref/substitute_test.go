package ref

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestWriteKey checks that keys are written as json.Marshal writes them,
// on the fast path and off it.
func TestWriteKey(t *testing.T) {
	for _, k := range []string{"", "v", "a b", "<tag>", "a&b", `q"uote`, `back\slash`, "tab\t", "é", "\u2028", "~/", "\xff"} {
		var b bytes.Buffer
		writeKey(&b, k)
		want, _ := json.Marshal(k)
		if got := b.String(); got != string(want) {
			t.Errorf("writeKey(%q) = %s, want %s", k, got, want)
		}
	}
}
