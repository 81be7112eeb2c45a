package message

import (
	"encoding/json"
	"testing"
)

func TestParseCallMeta(t *testing.T) {
	for _, tt := range []struct {
		call string
		want CallMeta
		err  string
	}{
		{call: `{"_tool":"t0","x":0,"_outputPath":"†state.r0"}`, want: CallMeta{Tool: "t0", OutputPath: "†state.r0"}},
		{call: `  {"_tool":"t","_instance":"i1","_outputPath":"†a.b || †c","_outputMethod":"push"}`,
			want: CallMeta{Tool: "t", Instance: "i1", OutputPath: "†a.b || †c", OutputMethod: "push"}},
		{call: `{"_tool":"t\u0031","_outputPath":"\u2020state.x"}`, want: CallMeta{Tool: "t1", OutputPath: "†state.x"}},
		{call: `{"_tool":"t\"q","_outputPath":null}`, want: CallMeta{Tool: `t"q`}},
		{call: "{\"_tool\":\"bad\xff\"}", want: CallMeta{Tool: "bad\uFFFD"}},
		{call: `{"\u005ftool":"escaped key"}`, want: CallMeta{Tool: "escaped key"}},
		{call: `{"x":1}`},
		{call: `{"_tool":1}`, err: "_tool must be a string, got 1"},
		{call: `{"_tool":"t","_outputPath":{"a": 1}}`, err: `_outputPath must be a string, got {"a": 1}`},
		{call: `[{"_tool":"t"}]`, err: "a call must be a JSON object"},
		{call: `"_tool"`, err: "a call must be a JSON object"},
		{call: `{"_tool":"t"`, err: "a call must be a JSON object"},
		{call: ``, err: "a call must be a JSON object"},
	} {
		got, err := ParseCallMeta(json.RawMessage(tt.call))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s: got %+v, %v; want error %q", tt.call, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.call, got, err, tt.want)
		}
	}
}
