package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/providertest"
)

// TestPromptCacheKey checks that Request.CacheKey goes out as
// prompt_cache_key, that nothing goes out without one or with
// Config.NoPromptCacheKey, and that
// prompt_tokens_details.cached_tokens comes back as CacheRead with Input
// excluding it, plain and streamed.
func TestPromptCacheKey(t *testing.T) {
	want := provider.Usage{Input: 150, Output: 20, Thinking: 8, CacheRead: 1920}
	sc := providertest.Scenario{Solutions: []string{`{"output":"Paris"}`}, Usage: want}
	for _, tt := range []struct {
		name   string
		cfg    Config
		key    string
		stream bool
		want   bool // whether prompt_cache_key goes out
	}{
		{name: "key", key: "run-01JD8X4Q6N", want: true},
		{name: "key, streamed", key: "idea:capital/v3", stream: true, want: true},
		{name: "key, NoPromptCacheKey", cfg: Config{NoPromptCacheKey: true}, key: "run-01JD8X4Q6N"},
		{name: "no key"},
		{name: "no key, streamed", stream: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []map[string]json.RawMessage
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				var body map[string]json.RawMessage
				if err := json.Unmarshal(b, &body); err != nil {
					t.Errorf("body is not a JSON object: %v\n%s", err, b)
				}
				mu.Lock()
				bodies = append(bodies, body)
				mu.Unlock()
				var req wireRequest
				json.Unmarshal(b, &req)
				if !req.Stream {
					w.Header().Set("Content-Type", "application/json")
					w.Write(completionJSON(sc))
					return
				}
				w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
				for _, event := range streamEvents(sc) {
					io.WriteString(w, "data: "+event+"\n\n")
				}
			}))
			t.Cleanup(srv.Close)
			cfg := tt.cfg
			cfg.BaseURL, cfg.APIKey, cfg.Model = srv.URL+"/v1", "sk-test", "gpt-5-mini"
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			req := &provider.Request{
				Messages: []provider.Message{
					{Role: provider.RoleSystem, Text: "You are terse.", Stable: true},
					{Role: provider.RoleUser, Text: "Capital of France?"},
				},
				Schema:   []byte(testSchema),
				Stream:   tt.stream,
				CacheKey: tt.key,
			}
			got, err := gather(t, p.Generate(context.Background(), req))
			if err != nil {
				t.Fatal(err)
			}
			if len(bodies) != 1 {
				t.Fatalf("%d requests, want 1", len(bodies))
			}
			raw, ok := bodies[0]["prompt_cache_key"]
			switch {
			case !tt.want && ok:
				t.Errorf("prompt_cache_key %s sent, want none", raw)
			case tt.want:
				var key string
				if err := json.Unmarshal(raw, &key); err != nil || key != tt.key {
					t.Errorf("prompt_cache_key %s, want %q", raw, tt.key)
				}
			}
			// Stable is a hint for breakpoints, which OpenAI has none of:
			// the messages go out as before.
			var msgs []map[string]any
			json.Unmarshal(bodies[0]["messages"], &msgs)
			if len(msgs) != 2 || len(msgs[0]) != 2 || msgs[0]["content"] != "You are terse." {
				t.Errorf("messages %s", bodies[0]["messages"])
			}
			if got.Usage == nil || *got.Usage != want {
				t.Errorf("usage %+v, want %+v", got.Usage, want)
			}
			if rate := got.Usage.CacheHitRate(); rate != 1920.0/2070 {
				t.Errorf("CacheHitRate() = %v, want %v", rate, 1920.0/2070)
			}
		})
	}
}
