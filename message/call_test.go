package message

import (
	"encoding/json"
	"testing"
)

// TestParseCallMetaShared checks that the sharing variant reads what
// ParseCallMeta reads, and fails where it fails, however call is written.
func TestParseCallMetaShared(t *testing.T) {
	for _, call := range []string{
		`{"_tool":"t0","x":0,"_outputPath":"†state.r0"}`,
		`  {"_tool":"t","_instance":"i1","_outputPath":"†a.b || †c","_outputMethod":"push"}`,
		`{"_tool":"t\u0031","_outputPath":"\u2020state.x"}`, // escapes are decoded, not shared
		`{"_tool":"t\"q","_outputPath":null}`,
		"{\"_tool\":\"bad\xff\"}", // invalid UTF-8 becomes U+FFFD
		`{"\u005ftool":"escaped key"}`,
		`{"x":1}`,
		`{"_tool":1}`,
		`[{"_tool":"t"}]`,
		`"_tool"`,
		`{"_tool":"t"`,
		``,
	} {
		want, werr := ParseCallMeta(json.RawMessage(call))
		for _, object := range []bool{false, true} {
			if object && !json.Valid([]byte(call)) {
				continue // object promises valid JSON
			}
			got, err := ParseCallMetaShared(json.RawMessage(call), object)
			if got != want || (err == nil) != (werr == nil) {
				t.Errorf("%s (object %v): got %+v, %v; want %+v, %v", call, object, got, err, want, werr)
			}
		}
	}
}
