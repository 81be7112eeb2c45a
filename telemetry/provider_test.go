package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"

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

func TestFinishReasons(t *testing.T) {
	// gen_ai.response.finish_reasons has the reason of each solution in
	// order, and, as the conventions ask, "error" for one that a failure
	// cut: a failed request has a reason for each of the N it asked for;
	// one that ended well, for those the provider sent. A consumer that
	// stops reading is no failure: the solutions it did not read to their
	// end were not received, and have no reason.
	broken := errors.New("connection reset")
	chunk := func(i int, reason string) *provider.Chunk {
		return &provider.Chunk{Index: i, Text: "1", Done: reason != "", FinishReason: reason}
	}
	for _, tt := range []struct {
		name   string
		n      int
		chunks []*provider.Chunk
		err    error // after the chunks
		stop   int   // the consumer stops after this many chunks; 0: never
		want   []string
	}{
		{"finished", 2, []*provider.Chunk{chunk(1, "length"), chunk(0, "stop")}, nil, 0, []string{"stop", "length"}},
		{"fewer than asked", 3, []*provider.Chunk{chunk(0, "stop")}, nil, 0, []string{"stop"}},
		{"one cut by a failure", 2, []*provider.Chunk{chunk(0, ""), chunk(1, "length")}, broken, 0, []string{"error", "length"}},
		{"failed before any chunk", 2, nil, broken, 0, []string{"error", "error"}},
		{"failed after the usage", 1, []*provider.Chunk{chunk(0, ""), {Usage: &provider.Usage{Input: 1}}}, broken, 0, []string{"error"}},
		{"stopped", 2, []*provider.Chunk{chunk(0, "stop"), chunk(1, "")}, nil, 2, []string{"stop"}},
		{"stopped before the first finished", 2, []*provider.Chunk{chunk(0, ""), chunk(1, "stop")}, nil, 2, []string{"stop"}},
		{"stopped before any finished", 2, []*provider.Chunk{chunk(0, ""), chunk(1, "")}, nil, 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec := recording()
			p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
				return func(yield func(*provider.Chunk, error) bool) {
					for _, c := range tt.chunks {
						if !yield(c, nil) {
							return
						}
					}
					if tt.err != nil {
						yield(nil, tt.err)
					}
				}
			})
			got := 0
			for range tr.Provider(p).Generate(context.Background(), &provider.Request{Model: "m", N: tt.n, Stream: true}) {
				if got++; got == tt.stop {
					break
				}
			}
			reasons, _ := attrs(rec.Ended()[0])["gen_ai.response.finish_reasons"].([]string)
			if d := cmp.Diff(reasons, tt.want); d != "" {
				t.Errorf("finish reasons (-got +want):\n%s", d)
			}
		})
	}
}

func TestConsumerStops(t *testing.T) {
	// A consumer that stops reading ends the request, which did not fail:
	// its span has no error status and no error.type, and keeps the usage
	// the provider said before (a failed stream's, on a chunk of its own).
	tr, rec := recording()
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			for _, c := range []*provider.Chunk{
				{Index: 0, Text: `{"a":1}`, Done: true, FinishReason: "stop", Usage: &provider.Usage{Input: 7, Output: 3}},
				{Index: 1, Text: `{"a":`},
				{Index: 1, Text: `2}`},
			} {
				if !yield(c, nil) {
					return
				}
			}
		}
	})
	got := 0
	for _, err := range tr.Provider(p).Generate(context.Background(), &provider.Request{Model: "m", N: 2, Stream: true}) {
		if err != nil {
			t.Fatal(err)
		}
		if got++; got == 2 {
			break
		}
	}
	span := rec.Ended()[0]
	if st := span.Status(); st.Code != codes.Unset {
		t.Errorf("status %v, want unset", st)
	}
	a := attrs(span)
	if v, ok := a["error.type"]; ok {
		t.Errorf("error.type %v, want none", v)
	}
	if d := cmp.Diff(a["gen_ai.response.finish_reasons"], any([]string{"stop"})); d != "" {
		t.Errorf("finish reasons (-got +want):\n%s", d)
	}
	if a["gen_ai.usage.input_tokens"] != int64(7) || a["gen_ai.usage.output_tokens"] != int64(3) {
		t.Errorf("usage: input %v, output %v; want 7 and 3", a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"])
	}
}
