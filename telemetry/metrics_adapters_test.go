package telemetry_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
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
	// streamed.
	answer := func(*strict.Request, int) (string, error) { return `{"output":1}`, nil }
	for _, tt := range []struct {
		name          string
		start         func(t *testing.T) (provider.Provider, string)
		provider      string
		asked, answer string
	}{
		{"openai", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewOpenAI(t, answer)
			p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-5-mini"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "openai", "gpt-5-mini", "gpt-strict"},
		{"anthropic", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewAnthropic(t, answer)
			p, err := anthropicapi.New(anthropicapi.Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "anthropic", anthropicapi.DefaultModel, anthropicapi.DefaultModel}, // the fake answers with the model asked for
		{"gemini", func(t *testing.T) (provider.Provider, string) {
			srv := strict.NewGemini(t, answer)
			p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-2.5-flash"})
			if err != nil {
				t.Fatal(err)
			}
			return p, srv.URL
		}, "gcp.gemini", "gemini-2.5-flash", "gemini-strict"},
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
				})
				on := "gen_ai.operation.name=chat gen_ai.provider.name=" + tt.provider + " gen_ai.request.model=" + tt.asked +
					" gen_ai.response.model=" + tt.answer + " server.address=" + u.Hostname() + " server.port=" + u.Port()
				want := []point{
					{"gen_ai.client.operation.duration", on, 1, 0},
					{"gen_ai.client.token.usage", with(on, "gen_ai.token.type=input"), 1, 0},
					{"gen_ai.client.token.usage", with(on, "gen_ai.token.type=output"), 1, 0},
				}
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
