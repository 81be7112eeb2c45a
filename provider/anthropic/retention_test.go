package anthropic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/provider"
)

// TestCacheRetention: provider.CacheLong marks every breakpoint to last
// an hour, streamed or not, and the usage counts the hour's writes apart;
// an unknown retention is refused before anything is sent.
func TestCacheRetention(t *testing.T) {
	srv := strict.NewAnthropic(t, func(*strict.Request, int) (string, error) { return `{"output":"Paris"}`, nil })
	p, err := New(Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []provider.Message{
		{Role: provider.RoleSystem, Text: strings.Repeat("Answer with the capital city asked for, in English. ", 120), Stable: true},
		{Role: provider.RoleUser, Text: "The capital of France?", Stable: true},
	}
	schema := []byte(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"]}`)
	for _, stream := range []bool{false, true} {
		req := &provider.Request{Messages: msgs, Schema: schema, Stream: stream, CacheRetention: provider.CacheLong}
		res, err := provider.Collect(p.Generate(context.Background(), req))
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		sent := srv.Requests()[len(srv.Requests())-1]
		if n := strings.Count(string(sent.Body), `"cache_control":{"ttl":"1h","type":"ephemeral"}`); n != 2 {
			t.Errorf("stream %v: %d hour-long breakpoints, want 2: %s", stream, n, sent.Body)
		}
		if u := res.Usage; u.CacheWrite+u.CacheRead == 0 || u.CacheWriteLong != sent.Cache.WriteHour {
			t.Errorf("stream %v: usage %+v, the API counted %+v", stream, u, sent.Cache)
		}
		srv.Advance(30 * time.Minute) // the next request reads what this one wrote
	}
	if got := srv.Requests()[1].Cache; got.Read == 0 {
		t.Errorf("30 minutes on, the second request read nothing: %+v", got)
	}
	// CacheShort is the API's default: no ttl.
	if _, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Messages: msgs, Schema: schema, CacheRetention: provider.CacheShort})); err != nil {
		t.Fatal(err)
	}
	if sent := srv.Requests()[len(srv.Requests())-1]; strings.Contains(string(sent.Body), `"ttl"`) || !strings.Contains(string(sent.Body), `"cache_control":{"type":"ephemeral"}`) {
		t.Errorf("CacheShort: %s", sent.Body)
	}
	before := len(srv.Requests())
	_, err = provider.Collect(p.Generate(context.Background(), &provider.Request{Messages: msgs, CacheRetention: "1d"}))
	if err == nil || !strings.Contains(err.Error(), `unknown cache retention "1d"`) {
		t.Errorf("retention 1d: %v", err)
	}
	if len(srv.Requests()) != before {
		t.Error("a request with an unknown retention was sent")
	}
}
