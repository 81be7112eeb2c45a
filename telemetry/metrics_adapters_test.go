package telemetry_test

import (
	"context"
	"encoding/json"
	"iter"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	anthropicapi "github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
)

func TestModelsOfAdapters(t *testing.T) {
	// A request that names no model goes to the adapter's default, which
	// its Endpoint says: the span and the measurements name it as the
	// model asked for, and the model the response named as the one that
	// answered. Each adapter talks to a fake of its API, plain and
	// streamed; only a stream's first chunk is timed.
	answer := func(*strict.Request, int) (string, error) { return `{"output":1}`, nil }
	for _, tt := range []struct {
		name          string
		start         func(t *testing.T) (provider.Provider, string)
		provider      string
		asked, answer string
		id            string // the response's, which only the span says
		chunks        uint64 // of a stream after the first, as the fake splits the answer
	}{
		{"openai", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewOpenAI(t, answer)
			p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-5-mini"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "openai", "gpt-5-mini", "gpt-strict", "chatcmpl-strict", 1},
		{"anthropic", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewAnthropic(t, answer)
			p, err := anthropicapi.New(anthropicapi.Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "anthropic", anthropicapi.DefaultModel, anthropicapi.DefaultModel, "msg_strict", 1}, // the fake answers with the model asked for
		{"gemini", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewGemini(t, answer)
			p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-2.5-flash"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "gcp.gemini", "gemini-2.5-flash", "gemini-strict", "strict", 0},
	} {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				p, base := tt.start(t)
				u, _ := url.Parse(base)
				tr, rec, reader := measuring(t)
				cfg := agent.Config{Provider: tr.Provider(p), Stream: stream}
				if _, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("pick")}); err != nil {
					t.Fatal(err)
				}
				// The conventions' operation of Gemini's API is
				// generate_content; of the others', chat.
				op := "chat"
				if tt.provider == "gcp.gemini" {
					op = "generate_content"
				}
				spans := find(rec.Ended(), op+" "+tt.asked)
				if len(spans) != 1 {
					t.Fatalf("spans:\n%s", tree(rec.Ended()))
				}
				checkAttrs(t, spans[0], map[string]any{
					"gen_ai.request.model": tt.asked, "gen_ai.response.model": tt.answer, "gen_ai.response.id": tt.id,
				})
				if _, timed := attrs(spans[0])["gen_ai.response.time_to_first_chunk"]; timed != stream {
					t.Errorf("the span has a time to the first chunk: %v", timed)
				}
				on := "gen_ai.operation.name=" + op + " gen_ai.provider.name=" + tt.provider + " gen_ai.request.model=" + tt.asked +
					" gen_ai.response.model=" + tt.answer + " server.address=" + u.Hostname() + " server.port=" + u.Port()
				want := []point{{"gen_ai.client.operation.duration", on, 1, 0}}
				if stream && tt.chunks > 0 {
					want = append(want, point{"gen_ai.client.operation.time_per_output_chunk", on, tt.chunks, 0})
				}
				if stream {
					want = append(want, point{"gen_ai.client.operation.time_to_first_chunk", on, 1, 0})
				}
				want = append(want,
					point{"gen_ai.client.token.usage", with(on, "gen_ai.token.type=input"), 1, 0},
					point{"gen_ai.client.token.usage", with(on, "gen_ai.token.type=output"), 1, 0})
				got := points(t, reader)
				for i := range got {
					got[i].Sum = 0 // the wall clock's, and the fake's usage
				}
				if d := cmp.Diff(got, want); d != "" {
					t.Errorf("measurements (-got +want):\n%s", d)
				}
			})
		}
	}
}

func TestTimeToFirstChunk(t *testing.T) {
	// The time to the first chunk is measured with the context's clock,
	// from the request to its stream's first chunk, once per streamed
	// request that got a chunk: not for a
	// request that does not stream, nor for one that failed before its
	// first chunk. One that failed after it counts, without error.type:
	// the conventions give this metric none.
	now := fixed()
	ctx := platform.WithClock(context.Background(), func() time.Time { return now })
	// slow answers its first chunk after 300ms and the rest 1s later,
	// ending with err if not nil.
	slow := func(err error) provider.Provider {
		return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			return func(yield func(*provider.Chunk, error) bool) {
				if err != nil && req.Model == "early" {
					now = now.Add(300 * time.Millisecond)
					yield(nil, err)
					return
				}
				now = now.Add(300 * time.Millisecond)
				if !yield(&provider.Chunk{Text: "1"}, nil) {
					return
				}
				now = now.Add(time.Second)
				if err != nil {
					yield(nil, err)
					return
				}
				yield(&provider.Chunk{Text: "2", Done: true, FinishReason: "stop", Usage: &provider.Usage{Input: 1, Output: 1}, Model: "m-2025"}, nil)
			}
		})
	}
	broken := &provider.Error{Provider: "anthropic", Status: 529}
	for _, tt := range []struct {
		name   string
		p      provider.Provider
		req    provider.Request
		want   []point
		spanAt float64 // the span's time to the first chunk; 0: none
	}{
		{"stream", slow(nil), provider.Request{Model: "m", Stream: true}, []point{
			{"gen_ai.client.operation.duration", "gen_ai.operation.name=chat gen_ai.request.model=m gen_ai.response.model=m-2025", 1, 1.3},
			{"gen_ai.client.operation.time_to_first_chunk", "gen_ai.operation.name=chat gen_ai.request.model=m gen_ai.response.model=m-2025", 1, 0.3},
		}, 0.3},
		{"not streamed", slow(nil), provider.Request{Model: "m"}, []point{
			{"gen_ai.client.operation.duration", "gen_ai.operation.name=chat gen_ai.request.model=m gen_ai.response.model=m-2025", 1, 1.3},
		}, 0},
		{"failed before its first chunk", slow(broken), provider.Request{Model: "early", Stream: true}, []point{
			{"gen_ai.client.operation.duration", "error.type=529 gen_ai.operation.name=chat gen_ai.request.model=early", 1, 0.3},
		}, 0},
		{"failed after its first chunk", slow(broken), provider.Request{Model: "m", Stream: true}, []point{
			{"gen_ai.client.operation.duration", "error.type=529 gen_ai.operation.name=chat gen_ai.request.model=m", 1, 1.3},
			{"gen_ai.client.operation.time_to_first_chunk", "gen_ai.operation.name=chat gen_ai.request.model=m", 1, 0.3},
		}, 0.3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec, reader := measuring(t)
			for range tr.Provider(tt.p).Generate(ctx, &tt.req) {
			}
			got := slices.DeleteFunc(points(t, reader), func(p point) bool {
				return p.Name == "gen_ai.client.token.usage" || p.Name == "gen_ai.client.operation.time_per_output_chunk"
			})
			if d := cmp.Diff(got, tt.want, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("measurements (-got +want):\n%s", d)
			}
			at, timed := attrs(rec.Ended()[0])["gen_ai.response.time_to_first_chunk"]
			if timed != (tt.spanAt != 0) || timed && math.Abs(at.(float64)-tt.spanAt) > 1e-9 {
				t.Errorf("the span's time to the first chunk: %v, want %v", at, tt.spanAt)
			}
		})
	}
}

func TestTimePerOutputChunk(t *testing.T) {
	// Each chunk of a stream after the first records the time since the
	// chunk before it, with the context's clock, in the conventions'
	// buckets and with the attributes of the other measurements: chunks
	// of any solution, but not a chunk that only says a failed stream's
	// usage, which is no piece of the answer. A request that does not
	// stream records none, nor does a stream of one chunk; one that
	// failed records those that came, without error.type, which the
	// conventions give this metric none.
	now := fixed()
	ctx := platform.WithClock(context.Background(), func() time.Time { return now })
	type timed struct {
		after time.Duration // since the chunk before, or the request
		c     *provider.Chunk
		err   error
	}
	script := func(items ...timed) provider.Provider {
		return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			return func(yield func(*provider.Chunk, error) bool) {
				for _, it := range items {
					now = now.Add(it.after)
					if !yield(it.c, it.err) {
						return
					}
				}
			}
		})
	}
	const on = "gen_ai.operation.name=chat gen_ai.request.model=m gen_ai.response.model=m-2025"
	const failed = "gen_ai.operation.name=chat gen_ai.request.model=m"
	usage := &provider.Usage{Input: 1, Output: 1}
	three := []timed{
		{300 * time.Millisecond, &provider.Chunk{Text: "1"}, nil},
		{100 * time.Millisecond, &provider.Chunk{Index: 1, Text: "2"}, nil},
		{200 * time.Millisecond, &provider.Chunk{Text: "3", Done: true, FinishReason: "stop"}, nil},
		{400 * time.Millisecond, &provider.Chunk{Index: 1, Done: true, FinishReason: "stop", Usage: usage, Model: "m-2025"}, nil},
	}
	broken := &provider.Error{Provider: "anthropic", Status: 529}
	for _, tt := range []struct {
		name   string
		p      provider.Provider
		stream bool
		want   *point // nil: none
		bucket int    // the bucket of the largest time, of the conventions' boundaries
	}{
		{"stream", script(three...), true, &point{"gen_ai.client.operation.time_per_output_chunk", on, 3, 0.7}, 6}, // 0.4 in (0.32, 0.64]
		{"not streamed", script(three...), false, nil, 0},
		{"one chunk", script(timed{time.Second, &provider.Chunk{Text: "1", Done: true, Usage: usage, Model: "m-2025"}, nil}), true, nil, 0},
		{"failed, its usage after", script(
			timed{300 * time.Millisecond, &provider.Chunk{Text: "1"}, nil},
			timed{1500 * time.Millisecond, &provider.Chunk{Text: "2"}, nil},
			timed{time.Second, &provider.Chunk{Usage: usage}, nil},
			timed{time.Second, nil, broken},
		), true, &point{"gen_ai.client.operation.time_per_output_chunk", failed, 1, 1.5}, 8}, // 1.5 in (1.28, 2.56]
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, reader := measuring(t)
			for range tr.Provider(tt.p).Generate(ctx, &provider.Request{Model: "m", N: 2, Stream: tt.stream}) {
			}
			var got []point
			for _, p := range points(t, reader) {
				if p.Name == "gen_ai.client.operation.time_per_output_chunk" {
					got = append(got, p)
				}
			}
			var want []point
			if tt.want != nil {
				want = append(want, *tt.want)
			}
			if d := cmp.Diff(got, want, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Fatalf("measurements (-got +want):\n%s", d)
			}
			if tt.want == nil {
				return
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			for _, m := range rm.ScopeMetrics[0].Metrics {
				if m.Name != tt.want.Name {
					continue
				}
				p := m.Data.(metricdata.Histogram[float64]).DataPoints[0]
				if want := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}; m.Unit != "s" || !slices.Equal(p.Bounds, want) {
					t.Errorf("unit %s, bounds %v, want s and %v", m.Unit, p.Bounds, want)
				}
				if top, ok := p.Max.Value(); p.BucketCounts[tt.bucket] == 0 || !ok || top > p.Bounds[tt.bucket] {
					t.Errorf("buckets %v, want the largest in bucket %d", p.BucketCounts, tt.bucket)
				}
			}
		})
	}
}
