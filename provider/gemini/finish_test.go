package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestReplayFinish replays answers that the API stopped short: by a safety
// filter, a recitation check, the token limit spent on thinking. Each
// yields the text that arrived and its finish reason; those the API
// stopped for a reason other than the token limit end with a
// *FinishError that says which, and why.
func TestReplayFinish(t *testing.T) {
	for _, tt := range []struct {
		name    string
		file    string
		stream  bool
		want    *provider.Result
		wantErr *FinishError
	}{
		{
			name: "blocked by the safety filter, whole", file: "finish_safety.json",
			want: &provider.Result{Texts: []string{""}, Thinking: []string{""}, FinishReasons: []string{"content_filter"},
				Usage: provider.Usage{Input: 31, Thinking: 27}},
			wantErr: &FinishError{Index: 0, Reason: "SAFETY", Categories: []string{"HARM_CATEGORY_DANGEROUS_CONTENT"}},
		},
		{
			name: "blocked by the safety filter mid-stream", file: "finish_safety.sse", stream: true,
			want: &provider.Result{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""}, FinishReasons: []string{"content_filter"},
				Usage: provider.Usage{Input: 31, Output: 9, Thinking: 27}},
			wantErr: &FinishError{Index: 0, Reason: "SAFETY", Categories: []string{"HARM_CATEGORY_DANGEROUS_CONTENT"}},
		},
		{
			name: "stopped for recitation", file: "finish_recitation.sse", stream: true,
			want: &provider.Result{Texts: []string{`{"output":"It was the best of times, it was the worst of times`}, Thinking: []string{""},
				FinishReasons: []string{"content_filter"}, Usage: provider.Usage{Input: 18, Output: 15}},
			wantErr: &FinishError{Index: 0, Reason: "RECITATION"},
		},
		{
			// The thinking spent the whole maxOutputTokens: no text, and
			// the caller reports a cut answer.
			name: "token limit reached while thinking", file: "max_tokens_thinking.json",
			want: &provider.Result{Texts: []string{""}, Thinking: []string{""}, FinishReasons: []string{"length"},
				Usage: provider.Usage{Input: 152, Thinking: 256}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := replay(t, tt.file, http.StatusOK, nil)
			req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "?"}}, Stream: tt.stream}
			got, chunks, err := collect(p.Generate(context.Background(), req))
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("result (-got +want):\n%s", diff)
			}
			checkChunks(t, chunks)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			fe, ok := errors.AsType[*FinishError](err)
			if !ok {
				t.Fatalf("got %v, want a *FinishError", err)
			}
			if diff := cmp.Diff(fe, tt.wantErr); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
		})
	}
}

// TestFinishReasons sends each finishReason the API documents, in a whole
// answer and at the end of a stream, after some text: all keep the text;
// STOP, MAX_TOKENS and CONTINUATION end normally, the others with a
// *FinishError.
func TestFinishReasons(t *testing.T) {
	for _, tt := range []struct {
		reason, want string
		fails        bool
	}{
		{"STOP", "stop", false},
		{"MAX_TOKENS", "length", false},
		{"CONTINUATION", "continuation", false},
		{"SAFETY", "content_filter", true},
		{"RECITATION", "content_filter", true},
		{"BLOCKLIST", "content_filter", true},
		{"PROHIBITED_CONTENT", "content_filter", true},
		{"SPII", "content_filter", true},
		{"IMAGE_SAFETY", "content_filter", true},
		{"LANGUAGE", "language", true},
		{"OTHER", "other", true},
		{"MALFORMED_FUNCTION_CALL", "malformed_function_call", true},
		{"UNEXPECTED_TOOL_CALL", "unexpected_tool_call", true},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					last := fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":"\"Paris"}],"role":"model"},"finishReason":%q,"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3,"totalTokenCount":12}}`, tt.reason)
					if !stream {
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprint(w, strings.Replace(last, `"\"Paris"`, `"{\"output\":\"Paris"`, 1))
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"index":0}]}`+"\r\n\r\n")
					fmt.Fprint(w, "data: "+last+"\r\n\r\n")
				}))
				defer srv.Close()
				p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
				if err != nil {
					t.Fatal(err)
				}
				got, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: stream}))
				want := &provider.Result{Texts: []string{`{"output":"Paris`}, Thinking: []string{""}, FinishReasons: []string{tt.want},
					Usage: provider.Usage{Input: 9, Output: 3}}
				if diff := cmp.Diff(got, want); diff != "" {
					t.Errorf("result (-got +want):\n%s", diff)
				}
				if !tt.fails {
					if err != nil {
						t.Errorf("got %v", err)
					}
					return
				}
				wantErr := &FinishError{Index: 0, Reason: tt.reason}
				if fe, ok := errors.AsType[*FinishError](err); !ok || !cmp.Equal(fe, wantErr) {
					t.Errorf("got %#v, want %#v", err, wantErr)
				}
			})
		}
	}
}

// TestFinishErrorLowestIndex: of two candidates stopped by filters, the
// error names the lower, and the other as Others, after the chunks of
// both.
func TestFinishErrorLowestIndex(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"candidates":[{"content":{"parts":[{"text":"{}"}],"role":"model"},"finishReason":"RECITATION","index":2},{"content":{"parts":[{"text":"{}"}],"role":"model"},"finishReason":"STOP"}]}`+"\r\n\r\n")
		fmt.Fprint(w, `data: {"candidates":[{"content":{"parts":[{"text":"{"}],"role":"model"},"finishReason":"SAFETY","index":1}]}`+"\r\n\r\n")
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	got, chunks, err := collect(p.Generate(context.Background(), &provider.Request{Stream: true, N: 3}))
	if fe, ok := errors.AsType[*FinishError](err); !ok || fe.Index != 1 || fe.Reason != "SAFETY" {
		t.Errorf("got %v, want the SAFETY of solution 1", err)
	} else if diff := cmp.Diff(fe.Solutions(), []int{1, 2}); diff != "" {
		t.Errorf("solutions stopped (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(got.Texts, []string{"{}", "{", "{}"}); diff != "" {
		t.Errorf("texts (-got +want):\n%s", diff)
	}
	checkChunks(t, chunks)
}

// TestPromptBlocked: a prompt the API blocks is a *BlockedError with its
// reason and the categories that blocked it; it wraps ErrNoCandidates.
func TestPromptBlocked(t *testing.T) {
	for _, tt := range []struct {
		file   string
		stream bool
		want   *BlockedError
		text   string
	}{
		{"prompt_blocked.json", false, &BlockedError{Reason: "PROHIBITED_CONTENT"}, "gemini: no candidates: prompt blocked (PROHIBITED_CONTENT)"},
		{"prompt_blocked.sse", true, &BlockedError{Reason: "PROHIBITED_CONTENT"}, "gemini: no candidates: prompt blocked (PROHIBITED_CONTENT)"},
		{"prompt_blocked_safety.sse", true, &BlockedError{Reason: "SAFETY", Categories: []string{"HARM_CATEGORY_HARASSMENT"}},
			"gemini: no candidates: prompt blocked (SAFETY: HARM_CATEGORY_HARASSMENT)"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			p := replay(t, tt.file, http.StatusOK, nil)
			_, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: tt.stream}))
			be, ok := errors.AsType[*BlockedError](err)
			if !ok || !errors.Is(err, ErrNoCandidates) {
				t.Fatalf("got %v, want a *BlockedError wrapping ErrNoCandidates", err)
			}
			if diff := cmp.Diff(be, tt.want); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
			if err.Error() != tt.text {
				t.Errorf("text %q, want %q", err, tt.text)
			}
		})
	}
}

func TestFinishErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&FinishError{Index: 0, Reason: "SAFETY", Categories: []string{"HARM_CATEGORY_DANGEROUS_CONTENT"}}, "gemini: solution 0 stopped (SAFETY: HARM_CATEGORY_DANGEROUS_CONTENT)"},
		{&FinishError{Index: 2, Reason: "OTHER"}, "gemini: solution 2 stopped (OTHER)"},
		{&BlockedError{Reason: "OTHER"}, "gemini: no candidates: prompt blocked (OTHER)"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestStoppedThenBroken: a candidate a filter stopped, whole before the
// stream broke, is reported as stopped, as on a stream that ended well,
// along with the failure: a stream that ends before the other
// candidate's finishReason, one that ends with an error event, and one
// whose connection is cut.
func TestStoppedThenBroken(t *testing.T) {
	const head = `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":\"x\"}"}],"role":"model"},"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}]}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"index":1}]}` + "\r\n\r\n"
	for _, tt := range []struct {
		name string
		tail string // after head; "reset" cuts the connection
		want error  // that the error wraps too; nil: a *provider.Error
	}{
		{"ended early", "", provider.ErrTruncated},
		{"error event", `data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}` + "\r\n\r\n", nil},
		{"connection cut", "reset", provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, head)
				if tt.tail != "reset" {
					fmt.Fprint(w, tt.tail)
					return
				}
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := collect(p.Generate(context.Background(), &provider.Request{Stream: true, N: 2}))
			if diff := cmp.Diff(got.Texts, []string{`{"output":"x"}`, `{"output":`}); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			se, ok := errors.AsType[provider.SolutionError](err)
			if !ok {
				t.Fatalf("got %v, want a provider.SolutionError", err)
			}
			if fe, ok := se.(*FinishError); !ok || fe.Reason != "SAFETY" || !cmp.Equal(fe.Solutions(), []int{0}) {
				t.Errorf("got %#v, want the SAFETY of solution 0 alone", se)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want it to wrap %v", err, tt.want)
			}
			if _, ok := errors.AsType[*provider.Error](err); tt.want == nil && !ok {
				t.Errorf("got %v, want it to wrap a *provider.Error", err)
			}
		})
	}
}
