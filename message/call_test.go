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
			got, _, err := ParseCallMetaShared(json.RawMessage(call), object)
			if got != want || (err == nil) != (werr == nil) {
				t.Errorf("%s (object %v): got %+v, %v; want %+v, %v", call, object, got, err, want, werr)
			}
		}
	}
}

// TestParseCallMetaRefs checks which calls may hold a reference in a
// parameter, which must then be substituted.
func TestParseCallMetaRefs(t *testing.T) {
	for call, want := range map[string]bool{
		`{"_tool":"t","x":1,"_outputPath":"†state.a"}`:           false, // the dagger is in a meta-property
		`{"_tool":"t","x":"†state.a.y"}`:                         true,
		`{"_tool":"t","x":{"deep":["†input.q"]}}`:                true,
		`{"_tool":"t","x":"\u2020state.a"}`:                      true,  // an escaped dagger
		`{"_tool":"t","\u0078":"†state.a"}`:                      true,  // an escaped parameter key
		`{"_tool":"t","\u005fnote":"†state.a"}`:                  false, // an escaped meta-property
		`{"_tool":"t","_outputPath":"†a || †b","_instance":"i"}`: false,
		`{"_tool":"t","text":"a dagger † in prose"}`:             true, // may: substitution decides
	} {
		_, refs, err := ParseCallMetaShared(json.RawMessage(call), true)
		if err != nil || refs != want {
			t.Errorf("%s: refs = %v, %v; want %v", call, refs, err, want)
		}
	}
}
