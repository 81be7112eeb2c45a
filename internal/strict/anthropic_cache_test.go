package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

// cacheBody is a Messages API body: a system block of about sysTokens
// tokens with a breakpoint, then one user message of n text blocks, with
// breakpoints on the blocks at the indexes in bps.
func cacheBody(format string, sysTokens, n int, bps ...int) []byte {
	return cacheBodyTTL(format, sysTokens, n, "", "", bps...)
}

// cacheBodyTTL is cacheBody whose system breakpoint has the ttl sysTTL and
// the others ttl ("" for none).
func cacheBodyTTL(format string, sysTokens, n int, sysTTL, ttl string, bps ...int) []byte {
	type block struct {
		Type         string `json:"type"`
		Text         string `json:"text"`
		CacheControl any    `json:"cache_control,omitempty"`
	}
	cc := func(ttl string) map[string]string {
		if ttl == "" {
			return map[string]string{"type": "ephemeral"}
		}
		return map[string]string{"type": "ephemeral", "ttl": ttl}
	}
	eph := cc(sysTTL)
	content := make([]block, n)
	for i := range content {
		content[i] = block{Type: "text", Text: fmt.Sprintf("## Data update: ¶state\nset †state.k%d: %d", i, i*i)}
	}
	for _, i := range bps {
		content[i].CacheControl = cc(ttl)
	}
	body, _ := json.Marshal(map[string]any{
		"model":         "claude-test",
		"max_tokens":    1024,
		"output_config": map[string]any{"format": map[string]any{"type": "json_schema", "schema": json.RawMessage(format)}},
		"system":        []block{{Type: "text", Text: strings.Repeat("Be brief. ", sysTokens*4/10), CacheControl: eph}},
		"messages":      []map[string]any{{"role": "user", "content": content}},
	})
	return body
}

// useBody bills the request body in c.
func useBody(t *testing.T, c anthropicCache, body []byte) Cache {
	t.Helper()
	blocks, err := anthropicBlocks(body)
	if err != nil {
		t.Fatal(err)
	}
	return c.write(blocks, c.read(blocks, 0), 0)
}

// TestAnthropicCacheTTL: an entry lasts its breakpoint's ttl from its
// last use, and an hour's entries are billed apart.
func TestAnthropicCacheTTL(t *testing.T) {
	const format = `{"type":"object"}`
	at := func(c anthropicCache, body []byte, now time.Duration) Cache {
		t.Helper()
		blocks, err := anthropicBlocks(body)
		if err != nil {
			t.Fatal(err)
		}
		return c.write(blocks, c.read(blocks, now), now)
	}
	short := anthropicCache{}
	body := cacheBody(format, 2000, 5, 4)
	first := at(short, body, 0)
	if first.Write == 0 || first.WriteHour != 0 {
		t.Fatalf("5-minute entries: %+v, want written, none for an hour", first)
	}
	// Read at 4 minutes, the entry lives on to 8: read again at 7.
	for _, now := range []time.Duration{4 * time.Minute, 7 * time.Minute} {
		if u := at(short, body, now); u.Read != first.Write {
			t.Errorf("at %v: %+v, want the %d tokens read", now, u, first.Write)
		}
	}
	if u := at(short, body, 13*time.Minute); u.Read != 0 || u.Write != first.Write {
		t.Errorf("6 minutes after the last use: %+v, want it all written again", u)
	}
	long := anthropicCache{}
	hour := cacheBodyTTL(format, 2000, 5, "1h", "1h", 4)
	if u := at(long, hour, 0); u.Write != first.Write || u.WriteHour != u.Write {
		t.Errorf("hour entries: %+v, want %d written, all for an hour", u, first.Write)
	}
	if u := at(long, hour, 50*time.Minute); u.Read != first.Write {
		t.Errorf("50 minutes on: %+v, want the %d tokens read", u, first.Write)
	}
	if u := at(long, hour, 111*time.Minute); u.Read != 0 {
		t.Errorf("61 minutes after the last use: %+v, want nothing read", u)
	}
	// The system's entry for an hour, the messages' for 5 minutes.
	mixed := anthropicCache{}
	both := cacheBodyTTL(format, 2000, 5, "1h", "", 4)
	u := at(mixed, both, 0)
	if u.WriteHour == 0 || u.WriteHour >= u.Write {
		t.Errorf("an hour's system, 5 minutes' messages: %+v, want part written for an hour", u)
	}
	if u2 := at(mixed, both, 30*time.Minute); u2.Read != u.WriteHour {
		t.Errorf("30 minutes on: %+v, want the system's %d tokens read", u2, u.WriteHour)
	}
	// A 5-minute breakpoint over an hour's entry does not shorten it.
	again := anthropicCache{}
	at(again, hour, 0)
	at(again, body, time.Minute)
	if u := at(again, hour, 40*time.Minute); u.Read != first.Write {
		t.Errorf("an hour's entry written again for 5 minutes, 39 minutes on: %+v, want the %d tokens read", u, first.Write)
	}
	for _, tt := range []struct{ sys, msgs, want string }{
		{"", "1h", "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"},
		{"2h", "", "system: cache_control.ttl: Input should be '5m' or '1h'"},
	} {
		if _, err := anthropicBlocks(cacheBodyTTL(format, 2000, 5, tt.sys, tt.msgs, 4)); err == nil || err.Error() != tt.want {
			t.Errorf("system ttl %q, messages %q: %v, want %q", tt.sys, tt.msgs, err, tt.want)
		}
	}
}

// TestAnthropicCache follows a conversation through the cache model: what
// each request reads depends on where its breakpoints are and on what the
// requests before it wrote.
func TestAnthropicCache(t *testing.T) {
	const format = `{"type":"object"}`
	c := anthropicCache{}
	use := func(body []byte) Cache { return useBody(t, c, body) }
	first := use(cacheBody(format, 2000, 5, 4))
	if first.Read != 0 || first.Write == 0 || first.Input != 0 {
		t.Fatalf("first request: %+v, want everything written", first)
	}
	same := use(cacheBody(format, 2000, 5, 4))
	if same.Read != first.Write || same.Write != 0 {
		t.Errorf("the same request again: %+v, want all %d tokens read", same, first.Write)
	}
	// Ten blocks more, the breakpoint moved to the end: the entry at block
	// 4 is within the lookback.
	near := use(cacheBody(format, 2000, 15, 14))
	if near.Read != first.Write || near.Write == 0 {
		t.Errorf("ten blocks on: %+v, want the %d tokens of the first read", near, first.Write)
	}
	// Thirty blocks more: the entry at block 14 is out of sight, only the
	// system's breakpoint hits.
	far := use(cacheBody(format, 2000, 45, 44))
	if far.Read >= near.Read || far.Read == 0 {
		t.Errorf("thirty blocks on: %+v, want only the system read (less than %d)", far, near.Read)
	}
	// With a breakpoint where the last request had its own, that entry is
	// read exactly.
	both := use(cacheBody(format, 2000, 80, 44, 79))
	if both.Read != far.Read+far.Write {
		t.Errorf("a breakpoint at the last one's: %+v, want %d read", both, far.Read+far.Write)
	}
	// A new output format starts over.
	other := use(cacheBody(`{"type":"object","properties":{}}`, 2000, 80, 44, 79))
	if other.Read != 0 {
		t.Errorf("another output format: %+v, want nothing read", other)
	}
	// A short prefix is not cached.
	short := anthropicCache{}
	for range 2 {
		if u := useBody(t, short, cacheBody(format, 100, 2, 1)); u.Read != 0 || u.Write != 0 || u.Input == 0 {
			t.Errorf("a short prefix: %+v, want all input", u)
		}
	}
}

// TestAnthropicServerBreakpoints: the server refuses a fifth breakpoint
// with the API's error, and reports what it read in the usage.
func TestAnthropicServerBreakpoints(t *testing.T) {
	srv := NewAnthropic(t, func(*Request, int) (string, error) { return `{}`, nil })
	post := func(body []byte) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := post(cacheBody(`{"type":"object"}`, 2000, 6, 1, 2, 3, 4))
	if status != 400 || !strings.Contains(body, "A maximum of 4 blocks with cache_control may be provided. Found 5.") {
		t.Errorf("five breakpoints: %d %s", status, body)
	}
	for i := range 2 {
		if status, body = post(cacheBody(`{"type":"object","additionalProperties":false}`, 2000, 6, 5)); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Cache
	if last.Read == 0 || !strings.Contains(body, fmt.Sprintf(`"cache_read_input_tokens":%d`, last.Read)) {
		t.Errorf("the second request read %+v; its usage: %s", last, body)
	}
}

// TestAnthropicCacheToolChoice: a new tool choice or thinking setting
// keeps the entries of the tools and the system, and drops those of the
// messages.
func TestAnthropicCacheToolChoice(t *testing.T) {
	eph := map[string]string{"type": "ephemeral"}
	body := func(extra map[string]any) []byte {
		b := map[string]any{
			"model":      "claude-test",
			"max_tokens": 4096,
			"tools":      []map[string]any{{"name": "solution", "input_schema": map[string]any{"type": "object"}, "cache_control": eph}},
			"system":     []map[string]any{{"type": "text", "text": strings.Repeat("Be brief. ", 800), "cache_control": eph}},
			"messages": []map[string]any{{"role": "user", "content": []map[string]any{
				{"type": "text", "text": strings.Repeat("Some data. ", 400), "cache_control": eph}}}},
		}
		maps.Copy(b, extra)
		out, _ := json.Marshal(b)
		return out
	}
	c := anthropicCache{}
	use := func(body []byte) Cache { return useBody(t, c, body) }
	forced := map[string]any{"tool_choice": map[string]string{"type": "tool", "name": "solution"}}
	first := use(body(forced))
	if first.Write == 0 {
		t.Fatalf("the first request wrote nothing: %+v", first)
	}
	if again := use(body(forced)); again.Read != first.Write {
		t.Errorf("the same request again: %+v, want all %d tokens read", again, first.Write)
	}
	for name, extra := range map[string]map[string]any{
		"tool_choice auto": {"tool_choice": map[string]string{"type": "auto"}},
		"thinking on": {"tool_choice": forced["tool_choice"],
			"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}},
	} {
		if u := use(body(extra)); u.Read == 0 || u.Read >= first.Write {
			t.Errorf("%s: %+v; want the tools' and the system's entries read, not the messages'", name, u)
		}
	}
}
