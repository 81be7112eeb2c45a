package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/providertest"
)

func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		tool string
	}{
		{"output_config", Config{}, ""},
		{"tool", Config{ToolOutput: true}, "solution"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			providertest.Run(t, func(t *testing.T, sc providertest.Scenario) provider.Provider {
				f := &fakeServer{t: t, sc: sc, tool: tt.tool, check: func(t *testing.T, req *wireRequest) {
					checkConformance(t, req, sc, tt.tool)
				}}
				p, _ := newTestServer(t, f, tt.cfg)
				return p
			}, providertest.Capabilities{Thinking: true})
		})
	}
}

func request(stream bool, n int) *provider.Request {
	temp := 0.5
	return &provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "You are terse."},
			{Role: provider.RoleUser, Text: "Name three colours."},
		},
		Schema:      json.RawMessage(`{"type":"object","properties":{"output":{"type":["string","null"]}},"required":["output"]}`),
		SchemaName:  "solution",
		N:           n,
		Stream:      stream,
		Temperature: &temp,
	}
}

func TestSeveralSolutions(t *testing.T) {
	sols := []string{`{"output":"red"}`, `{"output":"green"}`, `{"output":"blue"}`}
	per := provider.Usage{Input: 10, Output: 5, Thinking: 2, CacheRead: 3, CacheWrite: 1}
	for _, tt := range []struct {
		name       string
		stream     bool
		zeroIsSlow bool // solution 0 is answered after the others
	}{
		{"plain", false, false},
		{"stream", true, false},
		{"plain, solution 0 last", false, true},
		{"stream, solution 0 last", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols, Usage: per}}
			var h http.Handler = f
			if tt.zeroIsSlow {
				var others sync.WaitGroup
				others.Add(2)
				f.hold = func(r *http.Request, i int) bool {
					if i == 0 {
						others.Wait()
					}
					return true
				}
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					f.ServeHTTP(w, r)
					if r.Header.Get(indexHeader) != "0" {
						others.Done()
					}
				})
			}
			p, _ := newTestServer(t, h, Config{})
			var chunks []*provider.Chunk
			for c, err := range p.Generate(t.Context(), request(tt.stream, 3)) {
				if err != nil {
					t.Fatal(err)
				}
				chunks = append(chunks, c)
			}
			texts := make([]string, 3)
			for i, c := range chunks {
				texts[c.Index] += c.Text
				if last := i == len(chunks)-1; (c.Usage != nil) != last || (c.Model != "") != last || (c.ResponseID != "") != last {
					t.Errorf("chunk %d of %d has usage %v, model %q and response %q: want them on the last chunk only", i, len(chunks), c.Usage, c.Model, c.ResponseID)
				}
				if i > 0 && c.Index < chunks[i-1].Index {
					t.Errorf("chunk %d is of solution %d, after one of solution %d: want them in order", i, c.Index, chunks[i-1].Index)
				}
				if i > 0 && c.Index > chunks[i-1].Index && !chunks[i-1].Done {
					t.Errorf("chunk %d starts solution %d before solution %d is done", i, c.Index, chunks[i-1].Index)
				}
			}
			if diff := cmp.Diff(texts, sols); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			want := provider.Usage{Input: 30, Output: 15, Thinking: 6, CacheRead: 9, CacheWrite: 3}
			if got := chunks[len(chunks)-1].Usage; got == nil || *got != want {
				t.Errorf("usage %+v, want %+v", got, want)
			}
			if got := chunks[len(chunks)-1].Model; got != testModel {
				t.Errorf("model %q, want %q", got, testModel)
			}
			// The response of the request that ended last, which the
			// requests running concurrently leave open.
			ids := []string{messageID(0), messageID(1), messageID(2)}
			if got := chunks[len(chunks)-1].ResponseID; !slices.Contains(ids, got) {
				t.Errorf("response id %q, want one of %q", got, ids)
			}
			if got := len(f.requests()); got != 3 {
				t.Errorf("the server got %d requests, want 3", got)
			}
		})
	}
}

// TestSeveralSolutionsStop checks that breaking out of a stream of several
// solutions, or an error in one of them, cancels the requests still running
// and leaves no goroutine behind.
func TestSeveralSolutionsStop(t *testing.T) {
	sols := []string{`{"output":"red"}`, `{"output":"green"}`, `{"output":"blue"}`}
	for _, tt := range []struct {
		name    string
		fail    bool // solution 0 fails instead of answering
		wantErr bool
	}{
		{"break", false, false},
		{"error", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var arrived, cancelled sync.WaitGroup
			arrived.Add(2)
			cancelled.Add(2)
			f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols}}
			if tt.fail {
				f.sc.Status = http.StatusBadRequest
			}
			f.hold = func(r *http.Request, i int) bool {
				if i == 0 { // answers once the others are waiting
					arrived.Wait()
					return true
				}
				arrived.Done()
				select { // solutions 1 and 2 hang until their request is cancelled
				case <-r.Context().Done():
					cancelled.Done()
				case <-time.After(10 * time.Second):
					t.Errorf("request %d was not cancelled", i)
				}
				return false
			}
			p, _ := newTestServer(t, f, Config{})
			var err error
			for c, e := range p.Generate(t.Context(), request(true, 3)) {
				if e != nil {
					err = e
					break
				}
				if c.Index != 0 {
					t.Errorf("chunk of solution %d", c.Index)
				}
				break
			}
			if pe, ok := errors.AsType[*provider.Error](err); tt.wantErr != ok || (ok && pe.Status != http.StatusBadRequest) {
				t.Errorf("got error %v, want a 400: %v", err, tt.wantErr)
			}
			cancelled.Wait()
		})
	}
}

// TestSeveralSolutionsFailedUsage: when one of several requests fails
// after the others finished, the stream says the usage of those that
// finished before its error: their solutions may stand, and were paid for.
func TestSeveralSolutionsFailedUsage(t *testing.T) {
	sols := []string{`{"output":"red"}`, `{"output":"green"}`, `{"output":"blue"}`}
	per := provider.Usage{Input: 10, Output: 5, Thinking: 2, CacheRead: 3, CacheWrite: 1}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			release := make(chan struct{})
			f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols, Usage: per}}
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get(indexHeader) == "2" { // fails once solutions 0 and 1 arrived whole
					select {
					case <-release:
					case <-r.Context().Done():
						return
					}
					writeError(w, http.StatusInternalServerError, 0)
					return
				}
				f.ServeHTTP(w, r)
			})
			p, _ := newTestServer(t, h, Config{})
			var usage provider.Usage
			var err error
			texts := make([]string, 3)
			for c, e := range p.Generate(t.Context(), request(stream, 3)) {
				if e != nil {
					err = e
					break
				}
				texts[c.Index] += c.Text
				if c.Usage != nil {
					usage.Add(*c.Usage)
				}
				if c.Index == 1 && c.Done {
					close(release)
				}
			}
			if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Status != http.StatusInternalServerError {
				t.Fatalf("got error %v, want the 500", err)
			}
			if diff := cmp.Diff(texts[:2], sols[:2]); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			want := provider.Usage{Input: 20, Output: 10, Thinking: 4, CacheRead: 6, CacheWrite: 2}
			if usage != want {
				t.Errorf("usage %+v, want that of the two requests that finished, %+v", usage, want)
			}
		})
	}
}

// TestSeveralSolutionsStaggered: several solutions of a prompt long enough
// to be cached are asked one request first, and the others once its
// response began, when the API has made its cache entry available; a
// plain request is streamed on the wire for that, and still gathered into
// a chunk per solution. When the first request fails, the others are
// never sent.
func TestSeveralSolutionsStaggered(t *testing.T) {
	sols := []string{`{"output":"red"}`, `{"output":"green"}`, `{"output":"blue"}`}
	long := func(stream bool) *provider.Request {
		req := request(stream, 3)
		req.Messages[0].Text = strings.Repeat("You are terse. ", minCachedBody/15+1)
		return req
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			var answering atomic.Bool // request 0 is being answered
			f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols}}
			f.hold = func(r *http.Request, i int) bool {
				if i == 0 {
					answering.Store(true)
				} else if !answering.Load() {
					t.Errorf("request %d arrived before the response to request 0 began", i)
				}
				return true
			}
			p, _ := newTestServer(t, f, Config{})
			texts := make([]string, 3)
			chunks := 0
			for c, err := range p.Generate(t.Context(), long(stream)) {
				if err != nil {
					t.Fatal(err)
				}
				texts[c.Index] += c.Text
				chunks++
			}
			if diff := cmp.Diff(texts, sols); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if !stream && chunks != 3 {
				t.Errorf("%d chunks of a plain request, want one per solution", chunks)
			}
			for i, r := range f.requests() {
				if !r.Stream {
					t.Errorf("request %d was not streamed on the wire", i)
				}
			}
		})
	}
	t.Run("first fails", func(t *testing.T) {
		f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols, Status: http.StatusBadRequest}}
		p, _ := newTestServer(t, f, Config{})
		var err error
		for _, e := range p.Generate(t.Context(), long(true)) {
			err = e
		}
		if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Status != http.StatusBadRequest {
			t.Errorf("error %v, want the 400", err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d requests sent, want only the first", n)
		}
	})
	t.Run("short prompt", func(t *testing.T) {
		// Below the shortest prefix cached, nothing waits.
		var together sync.WaitGroup
		together.Add(3)
		f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: sols}}
		f.hold = func(r *http.Request, i int) bool {
			together.Done()
			together.Wait() // all three arrive before any is answered
			return true
		}
		p, _ := newTestServer(t, f, Config{})
		for _, err := range p.Generate(t.Context(), request(true, 3)) {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestSDKDoesNotRetry(t *testing.T) {
	var calls atomic.Int32
	p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("X-Should-Retry", "true")
			writeError(w, 529, 2)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		a := answer{model: testModel, text: `{"output":"ok"}`, usage: provider.Usage{Input: 1, Output: 1}}
		w.Write([]byte(a.message()))
	}), Config{})
	_, err := provider.Collect(p.Generate(t.Context(), request(false, 1)))
	if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Status != 529 || pe.Code != "overloaded_error" || pe.RetryAfter != 2*time.Second {
		t.Fatalf("got %v, want the 529", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the SDK sent %d requests, want 1", n)
	}

	var waits []time.Duration
	retry := provider.Retry(p, provider.RetryConfig{Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	calls.Store(0)
	r, err := provider.Collect(retry.Generate(t.Context(), request(false, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Texts[0] != `{"output":"ok"}` || calls.Load() != 2 || !cmp.Equal(waits, []time.Duration{2 * time.Second}) {
		t.Errorf("got %q after %d calls and waits %v", r.Texts, calls.Load(), waits)
	}
}

func TestNew(t *testing.T) {
	var gotKey string
	srv := func(t *testing.T) string {
		_, s := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotKey = r.Header.Get("X-Api-Key")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(answer{model: testModel, text: "hi"}.message()))
		}), Config{})
		return s.URL
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		cfg     Config
		wantKey string
		wantErr error
	}{
		{name: "from the environment", env: map[string]string{EnvAPIKey: "env-key", EnvBaseURL: "<srv>"}, wantKey: "env-key"},
		{name: "config wins", env: map[string]string{EnvAPIKey: "env-key", EnvBaseURL: "http://127.0.0.1:1"},
			cfg: Config{APIKey: "cfg-key", BaseURL: "<srv>"}, wantKey: "cfg-key"},
		{name: "no key", env: map[string]string{EnvAPIKey: ""}, wantErr: provider.ErrNoKey},
		{name: "bad base URL", cfg: Config{APIKey: "k", BaseURL: "api.anthropic.com"}, wantErr: errAny},
		{name: "negative max tokens", cfg: Config{APIKey: "k", MaxTokens: -1}, wantErr: errAny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := srv(t)
			for k, v := range tt.env {
				t.Setenv(k, strings.ReplaceAll(v, "<srv>", url))
			}
			if _, ok := tt.env[EnvBaseURL]; !ok {
				t.Setenv(EnvBaseURL, "")
			}
			tt.cfg.BaseURL = strings.ReplaceAll(tt.cfg.BaseURL, "<srv>", url)
			p, err := New(tt.cfg)
			if tt.wantErr != nil {
				if err == nil || (tt.wantErr != errAny && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.model != DefaultModel || p.maxTokens != DefaultMaxTokens {
				t.Errorf("model %q, max tokens %d: want the defaults", p.model, p.maxTokens)
			}
			req := request(false, 1)
			req.Model = testModel
			if _, err := provider.Collect(p.Generate(t.Context(), req)); err != nil {
				t.Fatal(err)
			}
			if gotKey != tt.wantKey {
				t.Errorf("x-api-key %q, want %q", gotKey, tt.wantKey)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

// TestCancelMidStream cancels ctx while the server is still streaming.
func TestCancelMidStream(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(map[int]string{1: "one solution", 2: "two solutions"}[n], func(t *testing.T) {
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// Read the body: only then does the server watch the
				// connection, and cancel r.Context() when the client goes.
				io.Copy(io.Discard, r.Body)
				a := answer{model: testModel, text: `{"output":"a long answer"}`}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, ev := range a.events()[:4] { // message_start … the first delta
					io.WriteString(w, ev)
				}
				w.(http.Flusher).Flush()
				select { // the server's Close waits for this
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
					t.Error("the request was not cancelled")
				}
			}), Config{})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var text string
			var err error
			for c, e := range p.Generate(ctx, request(true, n)) {
				if e != nil {
					err = e
					break
				}
				text += c.Text
				cancel()
			}
			if !errors.Is(err, context.Canceled) || text == "" {
				t.Errorf("got text %q and error %v, want some text and context.Canceled", text, err)
			}
		})
	}
}

// TestToolChoiceAuto checks the answers of tool mode with thinking on, where
// the tool choice is "auto": an answer in text, with no tool, is the
// solution, and text written before the tool is not part of it.
func TestToolChoiceAuto(t *testing.T) {
	const sol = `{"output":"red"}`
	for _, tt := range []struct {
		name, tool, preface, want string
		max                       int64
		wantErr                   bool
	}{
		{name: "the tool", tool: "solution", want: sol},
		{name: "text, then the tool", tool: "solution", preface: "I will answer with the tool.", want: sol},
		{name: "text only", want: sol},
		{name: "text over the cap", max: 20, wantErr: true}, // the thinking is 16 bytes
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: []string{sol}, Thinking: "Red is a colour."},
					tool: tt.tool, preface: tt.preface, check: func(t *testing.T, req *wireRequest) {
						if req.ToolChoice == nil || req.ToolChoice.Type != "auto" {
							t.Errorf("tool_choice %+v, want auto", req.ToolChoice)
						}
					}}
				p, _ := newTestServer(t, f, Config{ToolOutput: true, MaxAnswerBytes: tt.max})
				req := request(stream, 1)
				req.Temperature, req.Thinking = nil, 1024
				var text, thinking string
				var err error
				for c, e := range p.Generate(t.Context(), req) {
					if e != nil {
						err = e
						break
					}
					text += c.Text
					thinking += c.Thinking
				}
				if tt.wantErr {
					if _, ok := errors.AsType[*provider.LimitError](err); !ok {
						t.Fatalf("error %v, want a *provider.LimitError", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if text != tt.want || thinking != "Red is a colour." {
					t.Errorf("text %q, thinking %q: want %q and the thinking", text, thinking, tt.want)
				}
			})
		}
	}
}

// TestResponseID checks that the message's id goes on the last chunk, with
// the model, whether the answer is streamed or whole, and on the usage
// that a stream cut after message_start says before its error.
func TestResponseID(t *testing.T) {
	for _, tt := range []struct {
		name    string
		stream  bool
		cut     bool // the stream ends after half of the text
		wantErr error
	}{
		{name: "plain"},
		{name: "stream", stream: true},
		{name: "stream cut", stream: true, cut: true, wantErr: provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServer{t: t, sc: providertest.Scenario{Solutions: []string{`{"output":"red"}`}, Usage: provider.Usage{Input: 10, Output: 5}, Truncate: tt.cut}}
			p, _ := newTestServer(t, f, Config{})
			var last *provider.Chunk
			var err error
			for c, e := range p.Generate(t.Context(), request(tt.stream, 1)) {
				if e != nil {
					err = e
					break
				}
				if last != nil && last.ResponseID != "" {
					t.Errorf("chunk %+v after the one with the response id", c)
				}
				last = c
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if last == nil || last.ResponseID != messageID(0) || last.Usage == nil {
				t.Fatalf("last chunk %+v, want the usage and response id %q", last, messageID(0))
			}
		})
	}
}

// TestUnnamedErrorEvent: an error event that a proxy sends without its
// "event:" line ends the stream with the API's error, which names the
// model, rather than being skipped as the unnamed events are, which
// would leave a stream cut with the message lost.
func TestUnnamedErrorEvent(t *testing.T) {
	p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer{model: testModel, text: `{"output":"a long answer"}`}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range a.events()[:4] { // message_start … the first delta
			io.WriteString(w, ev)
		}
		io.WriteString(w, `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`+"\n\n")
	}), Config{})
	var text string
	var err error
	for c, e := range p.Generate(t.Context(), request(true, 1)) {
		if e != nil {
			err = e
			break
		}
		text += c.Text
	}
	pe, ok := errors.AsType[*provider.Error](err)
	if !ok || pe.Status != 529 || err.Error() != "anthropic "+testModel+": 529 Overloaded (overloaded_error): Overloaded" || text == "" {
		t.Errorf("got text %q and error %v, want some text and the 529", text, err)
	}
}

// TestErrorEventShapes: an error event that is not the API's own (a
// proxy's, in OpenAI's form or as text) ends the stream with its
// message, not with its JSON, as the other adapters do.
func TestErrorEventShapes(t *testing.T) {
	for _, tt := range []struct {
		name, tail string
		want       string
	}{
		{"the API's", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
			"anthropic " + testModel + ": 529 Overloaded (overloaded_error): Overloaded"},
		{"OpenAI's", "event: error\ndata: {\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			"anthropic " + testModel + ": 500 Internal Server Error: Rate limit reached"},
		{"error as text", "event: error\ndata: {\"error\":\"upstream timed out\"}\n\n",
			"anthropic " + testModel + ": 500 Internal Server Error: upstream timed out"},
		{"message at the top", "event: error\ndata: {\"message\":\"model is loading\"}\n\n",
			"anthropic " + testModel + ": 500 Internal Server Error: model is loading"},
		{"plain text", "event: error\ndata: upstream connect error\n\n",
			"anthropic " + testModel + ": 500 Internal Server Error: upstream connect error"},
		{"no message", "event: error\ndata:\n\n",
			"anthropic " + testModel + ": 500 Internal Server Error: an error event without a message"},
		{"bare line as text", "{\"error\":\"upstream timed out\"}\n",
			"anthropic " + testModel + ": 500 Internal Server Error: upstream timed out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a := answer{model: testModel, text: `{"output":"a long answer"}`}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, ev := range a.events()[:4] { // message_start … the first delta
					io.WriteString(w, ev)
				}
				io.WriteString(w, tt.tail)
			}), Config{})
			var err error
			for _, e := range p.Generate(t.Context(), request(true, 1)) {
				if e != nil {
					err = e
					break
				}
			}
			if _, ok := errors.AsType[*provider.Error](err); !ok || err.Error() != tt.want {
				t.Errorf("error %v, want a *provider.Error %q", err, tt.want)
			}
		})
	}
}
