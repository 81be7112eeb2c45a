package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestReplayFiltered replays answers a content filter stopped: OpenAI's
// finish_reason "content_filter" alone, and Azure OpenAI's with the
// categories of content_filter_results, whole and streamed, with one
// choice of two filtered (Azure names no model in its first chunk). Each
// keeps the text that arrived and its finish reason, and ends with a
// *FilterError after the chunks of every choice.
func TestReplayFiltered(t *testing.T) {
	for _, tt := range []struct {
		name    string
		file    string
		stream  bool
		want    gathered
		wantErr *FilterError
		text    string
	}{
		{
			name: "OpenAI, whole", file: "content_filter.http",
			want: gathered{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"content_filter"}, Usage: &provider.Usage{Input: 58, Output: 9}, Model: "gpt-4o-2024-08-06", ResponseID: "chatcmpl-E8lMn4OpQ6rS8tU0vW2xY4zA6bC8d"},
			wantErr: &FilterError{Index: 0},
			text:    "openai: solution 0 stopped by the content filter",
		},
		{
			name: "Azure, streamed", file: "azure_stream_filtered.http", stream: true,
			want: gathered{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"content_filter"}, Usage: &provider.Usage{Input: 58, Output: 9}, Model: "gpt-4o-2024-11-20", ResponseID: "chatcmpl-AzF1lTeR3dStReAm5aMpLe01"},
			wantErr: &FilterError{Index: 0, Categories: []string{"violence"}},
			text:    "openai: solution 0 stopped by the content filter (violence)",
		},
		{
			name: "Azure, whole, one choice of two", file: "azure_filtered_n2.http",
			want: gathered{Texts: []string{`{"output":"It was the best of times, it was the worst`, `{"output":"A novel of London and Paris."}`},
				Thinking: []string{"", ""}, FinishReasons: []string{"content_filter", "stop"}, Usage: &provider.Usage{Input: 40, Output: 24}, Model: "gpt-4o-2024-11-20", ResponseID: "chatcmpl-AzF2lTeR3dStReAm5aMpLe02"},
			wantErr: &FilterError{Index: 0, Categories: []string{"protected_material_text"}},
			text:    "openai: solution 0 stopped by the content filter (protected_material_text)",
		},
		{
			// The categories come in a chunk after the finish_reason, as
			// when Azure filters asynchronously.
			name: "Azure, streamed, one choice of two", file: "stream_n2_filtered.http", stream: true,
			want: gathered{Texts: []string{`{"output":"It was the best of times`, `{"output":"A novel."}`},
				Thinking: []string{"", ""}, FinishReasons: []string{"content_filter", "stop"}, Usage: &provider.Usage{Input: 40, Output: 14}, Model: "gpt-4o-2024-11-20", ResponseID: "chatcmpl-AzF3"},
			wantErr: &FilterError{Index: 0, Categories: []string{"protected_material_text"}},
			text:    "openai: solution 0 stopped by the content filter (protected_material_text)",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newCapture(t, readRecorded(t, tt.file))
			p, err := New(Config{BaseURL: srv.url(), APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			req := replayRequest(tt.stream)
			req.N = len(tt.want.Texts)
			got, err := gather(t, p.Generate(context.Background(), req))
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("result (-got +want):\n%s", diff)
			}
			fe, ok := errors.AsType[*FilterError](err)
			if !ok {
				t.Fatalf("got %v, want a *FilterError", err)
			}
			if diff := cmp.Diff(fe, tt.wantErr); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
			if err.Error() != tt.text {
				t.Errorf("text %q, want %q", err, tt.text)
			}
		})
	}
}

// TestFilterAndRefusal: of a refused choice and a filtered one, the error
// names the lower index, and the other choices stopped as Others.
func TestFilterAndRefusal(t *testing.T) {
	for _, tt := range []struct {
		filter    *FilterError
		stopped   []int
		want      error
		solutions []int
	}{
		{nil, []int{1}, &RefusalError{Index: 1, Message: "No."}, []int{1}},
		{nil, []int{1, 3, 1}, &RefusalError{Index: 1, Message: "No.", Others: []int{3}}, []int{1, 3}},
		{&FilterError{Index: 0}, []int{1, 0}, &FilterError{Index: 0, Others: []int{1}}, []int{0, 1}},
		{&FilterError{Index: 1}, []int{1, 1}, &RefusalError{Index: 1, Message: "No."}, []int{1}},
		{&FilterError{Index: 2}, []int{2, 1}, &RefusalError{Index: 1, Message: "No.", Others: []int{2}}, []int{1, 2}},
	} {
		refusal := &RefusalError{Index: 1, Message: "No."}
		got := stopError(refusal, tt.filter, tt.stopped)
		if !cmp.Equal(got, tt.want) {
			t.Errorf("stopError(%v, %v, %v) = %#v, want %#v", refusal, tt.filter, tt.stopped, got, tt.want)
		}
		if se, ok := got.(provider.SolutionError); !ok || !cmp.Equal(se.Solutions(), tt.solutions) {
			t.Errorf("Solutions() of %#v, want %v", got, tt.solutions)
		}
	}
	if got := stopError(nil, nil, nil); got != nil {
		t.Errorf("stopError(nil, nil, nil) = %v", got)
	}
}

// TestSeveralStopped: with choice 1 refused and choice 2 filtered of
// three, whole and streamed, the error names choice 1 and, as Others,
// choice 2, so that neither is taken for a whole answer.
func TestSeveralStopped(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !stream {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[`+
						`{"index":0,"message":{"role":"assistant","content":"{}","refusal":null},"finish_reason":"stop"},`+
						`{"index":1,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"stop"},`+
						`{"index":2,"message":{"role":"assistant","content":"{","refusal":null},"finish_reason":"content_filter"}],`+
						`"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, choice := range []string{
					`{"index":0,"delta":{"content":"{}"},"finish_reason":"stop"}`,
					`{"index":1,"delta":{"refusal":"No."},"finish_reason":null}`,
					`{"index":2,"delta":{"content":"{"},"finish_reason":"content_filter"}`,
					`{"index":1,"delta":{},"finish_reason":"stop"}`,
				} {
					fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[%s]}\n\n", choice)
				}
				fmt.Fprint(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			p, err := New(Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			req := replayRequest(stream)
			req.N = 3
			got, err := gather(t, p.Generate(context.Background(), req))
			if diff := cmp.Diff(got.Texts, []string{"{}", "", "{"}); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(err, error(&RefusalError{Index: 1, Message: "No.", Others: []int{2}})); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
		})
	}
}

// TestFilteredThenBroken: a choice the content filter stopped, whole
// before the stream broke, is reported as filtered, as on a stream that
// ended well, along with the failure: a stream that ends before the
// other choice's finish_reason, one that ends with an error event, and
// one whose connection is cut.
func TestFilteredThenBroken(t *testing.T) {
	const head = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"{\"output\":\"x\"}"},"finish_reason":"content_filter","content_filter_results":{"violence":{"filtered":true,"severity":"medium"}}}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":1,"delta":{"content":"{\"output\":"},"finish_reason":null}]}` + "\n\n"
	for _, tt := range []struct {
		name string
		tail string // after head; "reset" cuts the connection
		want error  // that the error wraps too
	}{
		{"ended early", "", provider.ErrTruncated},
		{"error event", `data: {"error":{"message":"The server had an error","type":"server_error"}}` + "\n\n", nil},
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
				conn.Close() // the chunked body never ends
			}))
			defer srv.Close()
			p, err := New(Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-test"})
			if err != nil {
				t.Fatal(err)
			}
			req := replayRequest(true)
			req.N = 2
			got, err := gather(t, p.Generate(context.Background(), req))
			if diff := cmp.Diff(got.Texts, []string{`{"output":"x"}`, `{"output":`}); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			se, ok := errors.AsType[provider.SolutionError](err)
			if !ok {
				t.Fatalf("got %v, want a provider.SolutionError", err)
			}
			if diff := cmp.Diff(se, provider.SolutionError(&FilterError{Index: 0, Categories: []string{"violence"}})); diff != "" {
				t.Errorf("stop (-got +want):\n%s", diff)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want it to wrap %v", err, tt.want)
			}
			if tt.want == nil && asAPIErr(err) == nil {
				t.Errorf("got %v, want it to wrap a *provider.Error", err)
			}
		})
	}
}
