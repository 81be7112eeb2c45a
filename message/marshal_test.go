package message

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestWriteString checks that strings are written as an encoder without
// HTML escaping writes them, on the fast path and off it.
func TestWriteString(t *testing.T) {
	for _, s := range []string{"", "v", "a b", "<tag>&", `q"uote`, `back\slash`, "tab\t", "é", "\u2028", "\xff", "\x7f"} {
		var b bytes.Buffer
		writeString(&b, s)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		if got := b.String(); got != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("writeString(%q) = %s, want %s", s, got, want.Bytes())
		}
	}
}
