package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
)

func TestRequestSettings(t *testing.T) {
	// The span of a request says the settings the conventions ask for
	// under their conditions: gen_ai.request.stream if and only if the
	// request streams (unset means it does not), gen_ai.output.type if
	// the request asks for a format (a schema: json; free text asks for
	// none).
	schema := json.RawMessage(`{"type":"object"}`)
	temp := 0.5
	for _, tt := range []struct {
		name string
		req  provider.Request
		want map[string]any // the attributes below; absent: not set
	}{
		{"plain", provider.Request{Model: "m", Schema: schema}, map[string]any{"gen_ai.output.type": "json"}},
		{"free text", provider.Request{Model: "m"}, map[string]any{}},
		{"stream", provider.Request{Model: "m", Schema: schema, Stream: true}, map[string]any{"gen_ai.output.type": "json", "gen_ai.request.stream": true}},
		{"settings", provider.Request{Model: "m", Schema: schema, N: 3, Temperature: &temp, MaxTokens: 100}, map[string]any{
			"gen_ai.output.type": "json", "gen_ai.request.choice.count": int64(3), "gen_ai.request.temperature": 0.5, "gen_ai.request.max_tokens": int64(100),
		}},
		{"one choice", provider.Request{Model: "m", Schema: schema, N: 1}, map[string]any{"gen_ai.output.type": "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec := recording()
			sols := []string{"1", "2", "3"}[:max(tt.req.N, 1)]
			p := scripted.New(scripted.Response{Solutions: sols})
			for _, err := range tr.Provider(p).Generate(context.Background(), &tt.req) {
				if err != nil {
					t.Fatal(err)
				}
			}
			got := map[string]any{}
			for k, v := range attrs(rec.Ended()[0]) {
				switch k {
				case "gen_ai.output.type", "gen_ai.request.stream", "gen_ai.request.choice.count", "gen_ai.request.temperature", "gen_ai.request.max_tokens":
					got[k] = v
				}
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("attributes (-got +want):\n%s", d)
			}
		})
	}
}
