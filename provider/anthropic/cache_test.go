package anthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// maxBreakpoints is the most cache_control breakpoints the API accepts in
// one request.
const maxBreakpoints = 4

// breakpoints returns the JSON Pointer of every object in body that has a
// cache_control member, in document order, and fails the test on a
// cache_control other than {"type":"ephemeral"}.
func breakpoints(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	var out []string
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"]; ok {
				if !cmp.Equal(cc, map[string]any{"type": "ephemeral"}) {
					t.Errorf("%s/cache_control = %v, want {type: ephemeral}", ptr, cc)
				}
				out = append(out, ptr)
			}
			// The schema's properties may be named anything; the keys that
			// hold blocks are walked in a fixed order.
			for _, k := range []string{"tools", "system", "messages", "content"} {
				if c, ok := v[k]; ok {
					walk(c, ptr+"/"+k)
				}
			}
			for k, c := range v {
				if k != "tools" && k != "system" && k != "messages" && k != "content" {
					walkStray(t, c, ptr+"/"+k)
				}
			}
		case []any:
			for i, c := range v {
				walk(c, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(v, "")
	return out
}

// walkStray fails the test on a cache_control anywhere under v, which is no
// place for a breakpoint.
func walkStray(t *testing.T, v any, ptr string) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if k == "cache_control" {
				t.Errorf("unexpected breakpoint at %s/cache_control", ptr)
			}
			walkStray(t, c, ptr+"/"+k)
		}
	case []any:
		for i, c := range v {
			walkStray(t, c, ptr+"/"+strconv.Itoa(i))
		}
	}
}

// TestCacheBreakpoints checks that each request has cache_control exactly on
// the forced tool, the last system block and the blocks of the last two
// Stable messages, and never more than the API's four.
func TestCacheBreakpoints(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"]}`)
	sys := func(text string) provider.Message { return provider.Message{Role: provider.RoleSystem, Text: text} }
	user := func(text string) provider.Message { return provider.Message{Role: provider.RoleUser, Text: text} }
	asst := func(text string) provider.Message { return provider.Message{Role: provider.RoleAssistant, Text: text} }
	stable := func(m provider.Message) provider.Message { m.Stable = true; return m }
	allStable := func(msgs ...provider.Message) []provider.Message {
		for i := range msgs {
			msgs[i].Stable = true
		}
		return msgs
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		req  provider.Request
		want []string
	}{
		{
			name: "no Stable message: the system only",
			req:  provider.Request{Messages: []provider.Message{sys("You are terse."), user("Hi."), asst(`{"output":"hi"}`), user("Again.")}, Schema: schema},
			want: []string{"/system/0"},
		},
		{
			name: "no system and no Stable message: none",
			req:  provider.Request{Messages: []provider.Message{user("Hi.")}, Schema: schema},
		},
		{
			name: "no Stable message, forced tool: the tool and the system",
			cfg:  Config{ToolOutput: true},
			req:  provider.Request{Messages: []provider.Message{sys("You are terse."), user("Hi.")}, Schema: schema},
			want: []string{"/tools/0", "/system/0"},
		},
		{
			name: "forced tool without a system",
			cfg:  Config{ToolOutput: true},
			req:  provider.Request{Messages: []provider.Message{user("Hi.")}, Schema: schema},
			want: []string{"/tools/0"},
		},
		{
			name: "free text: no tool",
			cfg:  Config{ToolOutput: true},
			req:  provider.Request{Messages: []provider.Message{sys("Chat."), stable(user("Hi."))}},
			want: []string{"/system/0", "/messages/0/content/0"},
		},
		{
			name: "the last two Stable messages, inside merged messages",
			req: provider.Request{Messages: []provider.Message{
				sys("You are terse."), sys("## Data: ¶input\n{}"),
				stable(user("Task.")), stable(asst(`{"output":null}`)),
				user("tool result 1"), stable(user("tool result 2")), user("Answer now."),
			}, Schema: schema},
			want: []string{"/system/1", "/messages/1/content/0", "/messages/2/content/1"},
		},
		{
			name: "forced tool, two system blocks and Stable messages: four",
			cfg:  Config{ToolOutput: true},
			req: provider.Request{Messages: []provider.Message{
				sys("You are terse."), sys("Tools: lookup."), stable(user("Task.")), asst(`{"output":null}`), stable(user("result")),
			}, Schema: schema, Thinking: 2048},
			want: []string{"/tools/0", "/system/1", "/messages/0/content/0", "/messages/2/content/0"},
		},
		{
			name: "the Stable message before the last is an earlier system block: four",
			cfg:  Config{ToolOutput: true},
			req: provider.Request{Messages: []provider.Message{
				stable(sys("You are terse.")), sys("Tools: lookup."), user("Task."), stable(user("result")),
			}, Schema: schema},
			want: []string{"/tools/0", "/system/0", "/system/1", "/messages/0/content/1"},
		},
		{
			name: "every message Stable",
			cfg:  Config{ToolOutput: true},
			req: provider.Request{Messages: allStable(
				sys("a"), sys("b"), sys("c"), user("d"), asst("e"), user("f"), asst("g"), user("h"), user("i"),
			), Schema: schema},
			want: []string{"/tools/0", "/system/2", "/messages/4/content/0", "/messages/4/content/1"},
		},
		{
			name: "the last Stable message is a system message",
			req: provider.Request{Messages: []provider.Message{
				stable(sys("You are terse.")), sys("Now: step 3."), user("Go on."),
			}, Schema: schema},
			want: []string{"/system/0", "/system/1"},
		},
		{
			name: "the last Stable message is a system message sent in place",
			req: provider.Request{Messages: []provider.Message{
				user("Go on."), stable(sys("You are terse.")), asst("ok"), user("More."),
			}, Schema: schema},
			want: []string{"/messages/0/content/1"},
		},
		{
			name: "streamed, N = 2: the same on every request",
			req: provider.Request{Messages: []provider.Message{
				sys("You are terse."), stable(user("Task.")), user("Answer."),
			}, Schema: schema, Stream: true, N: 2},
			want: []string{"/system/0", "/messages/0/content/0"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies [][]byte
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, b)
				mu.Unlock()
				var req wireRequest
				json.Unmarshal(b, &req)
				a := answer{model: req.Model, text: `{"output":"ok"}`, usage: provider.Usage{Input: 1, Output: 1}}
				if len(req.Tools) > 0 {
					a.tool = req.Tools[0].Name
				}
				if req.Stream {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, strings.Join(a.events(), ""))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, a.message())
			}), tt.cfg)
			if _, err := provider.Collect(p.Generate(t.Context(), &tt.req)); err != nil {
				t.Fatal(err)
			}
			if want := max(tt.req.N, 1); len(bodies) != want {
				t.Fatalf("%d requests, want %d", len(bodies), want)
			}
			for _, body := range bodies {
				got := breakpoints(t, body)
				if len(got) > maxBreakpoints {
					t.Errorf("%d breakpoints, the API takes at most %d", len(got), maxBreakpoints)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("breakpoints at %q, want %q\n%s", got, tt.want, body)
				}
			}
		})
	}
}

// TestCacheBreakpointMoves: in three steps of a run, each appending to the
// one before, the message breakpoints follow the end of the stable prefix:
// one where the request before ended its own, which reads its entry
// exactly however many blocks the step added, and one at the new end.
func TestCacheBreakpointMoves(t *testing.T) {
	var mu sync.Mutex
	var bodies []wireBlocks
	p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wireBlocks
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Error(err)
		}
		mu.Lock()
		bodies = append(bodies, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer{model: testModel, text: "ok", usage: provider.Usage{Input: 1, Output: 1}}.message())
	}), Config{})
	step1 := []provider.Message{
		{Role: provider.RoleSystem, Text: "You are terse."},
		{Role: provider.RoleUser, Text: "Task.", Stable: true},
	}
	step2 := append(slices.Clip(step1), provider.Message{Role: provider.RoleAssistant, Text: `{"calls":[]}`},
		provider.Message{Role: provider.RoleUser, Text: "result", Stable: true})
	step3 := append(slices.Clip(step2), provider.Message{Role: provider.RoleAssistant, Text: `{"calls":[]}`},
		provider.Message{Role: provider.RoleUser, Text: "result 2", Stable: true})
	for _, msgs := range [][]provider.Message{step1, step2, step3} {
		if _, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Messages: msgs})); err != nil {
			t.Fatal(err)
		}
	}
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	// The system is the same, breakpoint included.
	for i := 1; i < 3; i++ {
		if diff := cmp.Diff(bodies[0].System, bodies[i].System); diff != "" {
			t.Errorf("system differs between steps 1 and %d (-1 +%d):\n%s", i+1, i+1, diff)
		}
	}
	for i, want := range [][]string{{"Task."}, {"Task.", "result"}, {"result", "result 2"}} {
		var got []string
		for _, m := range bodies[i].Messages {
			for _, b := range m.Content {
				if b.CacheControl != nil {
					got = append(got, b.Text)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("step %d: breakpoints on %q, want %q", i+1, got, want)
		}
	}
}

// wireBlocks is a request body with the cache_control of each block.
type wireBlocks struct {
	System   []wireBlock `json:"system"`
	Messages []struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	} `json:"messages"`
}

type wireBlock struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	CacheControl *struct {
		Type string `json:"type"`
	} `json:"cache_control"`
}

// TestCacheUsage checks that the cache counts of message_start (in a
// stream) or of the usage (in a plain answer) reach provider.Usage.
func TestCacheUsage(t *testing.T) {
	want := provider.Usage{Input: 12, Output: 7, CacheRead: 3000, CacheWrite: 500}
	for _, stream := range []bool{false, true} {
		t.Run("stream="+strconv.FormatBool(stream), func(t *testing.T) {
			var sawStream bool
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req wireRequest
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
					t.Error(err)
				}
				sawStream = req.Stream
				a := answer{model: req.Model, text: "ok", usage: want}
				if req.Stream {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, strings.Join(a.events(), ""))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, a.message())
			}), Config{})
			res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{
				Messages: []provider.Message{{Role: provider.RoleUser, Text: "Hi.", Stable: true}},
				Stream:   stream,
			}))
			if err != nil {
				t.Fatal(err)
			}
			if sawStream != stream {
				t.Errorf("stream %v on the wire, want %v", sawStream, stream)
			}
			if res.Usage != want {
				t.Errorf("usage %+v, want %+v", res.Usage, want)
			}
			if got, wantRate := res.Usage.CacheHitRate(), 3000.0/3512; got != wantRate {
				t.Errorf("CacheHitRate() = %v, want %v", got, wantRate)
			}
		})
	}
}
