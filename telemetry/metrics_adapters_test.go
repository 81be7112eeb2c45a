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
	}{
		{"openai", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewOpenAI(t, answer)
			p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-5-mini"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "openai", "gpt-5-mini", "gpt-strict", "chatcmpl-strict"},
		{"anthropic", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewAnthropic(t, answer)
			p, err := anthropicapi.New(anthropicapi.Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "anthropic", anthropicapi.DefaultModel, anthropicapi.DefaultModel, "msg_strict"}, // the fake answers with the model asked for
		{"gemini", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewGemini(t, answer)
			p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-2.5-flash"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "gcp.gemini", "gemini-2.5-flash", "gemini-strict", "strict"},
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
				spans := find(rec.Ended(), "chat "+tt.asked)
				if len(spans) != 1 {
					t.Fatalf("spans:\n%s", tree(rec.Ended()))
				}
				checkAttrs(t, spans[0], map[string]any{
					"gen_ai.request.model": tt.asked, "gen_ai.response.model": tt.answer, "gen_ai.request.stream": stream,
					"gen_ai.response.id": tt.id,
				})
				if _, timed := attrs(spans[0])["gen_ai.response.time_to_first_chunk"]; timed != stream {
					t.Errorf("the span has a time to the first chunk: %v", timed)
				}
				on := "gen_ai.operation.name=chat gen_ai.provider.name=" + tt.provider + " gen_ai.request.model=" + tt.asked +
					" gen_ai.response.model=" + tt.answer + " server.address=" + u.Hostname() + " server.port=" + u.Port()
				want := []point{{"gen_ai.client.operation.duration", on, 1, 0}}
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
			got := slices.DeleteFunc(points(t, reader), func(p point) bool { return p.Name == "gen_ai.client.token.usage" })
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
