package openai

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestReplayFiltered replays answers a content filter stopped: OpenAI's
// finish_reason "content_filter" alone, and Azure OpenAI's with the
// categories of content_filter_results, whole and streamed, with one
// choice of two filtered. Each keeps the text that arrived and its finish
// reason, and ends with a *FilterError after the chunks of every choice.
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
				FinishReasons: []string{"content_filter"}, Usage: &provider.Usage{Input: 58, Output: 9}},
			wantErr: &FilterError{Index: 0},
			text:    "openai: solution 0 stopped by the content filter",
		},
		{
			name: "Azure, streamed", file: "azure_stream_filtered.http", stream: true,
			want: gathered{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"content_filter"}, Usage: &provider.Usage{Input: 58, Output: 9}},
			wantErr: &FilterError{Index: 0, Categories: []string{"violence"}},
			text:    "openai: solution 0 stopped by the content filter (violence)",
		},
		{
			name: "Azure, whole, one choice of two", file: "azure_filtered_n2.http",
			want: gathered{Texts: []string{`{"output":"It was the best of times, it was the worst`, `{"output":"A novel of London and Paris."}`},
				Thinking: []string{"", ""}, FinishReasons: []string{"content_filter", "stop"}, Usage: &provider.Usage{Input: 40, Output: 24}},
			wantErr: &FilterError{Index: 0, Categories: []string{"protected_material_text"}},
			text:    "openai: solution 0 stopped by the content filter (protected_material_text)",
		},
		{
			// The categories come in a chunk after the finish_reason, as
			// when Azure filters asynchronously.
			name: "Azure, streamed, one choice of two", file: "stream_n2_filtered.http", stream: true,
			want: gathered{Texts: []string{`{"output":"It was the best of times`, `{"output":"A novel."}`},
				Thinking: []string{"", ""}, FinishReasons: []string{"content_filter", "stop"}, Usage: &provider.Usage{Input: 40, Output: 14}},
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
// names the lower index.
func TestFilterAndRefusal(t *testing.T) {
	refusal := &RefusalError{Index: 1, Message: "No."}
	for _, tt := range []struct {
		filter *FilterError
		want   error
	}{
		{nil, refusal},
		{&FilterError{Index: 0}, &FilterError{Index: 0}},
		{&FilterError{Index: 1}, refusal},
		{&FilterError{Index: 2}, refusal},
	} {
		if got := stopError(refusal, tt.filter); !cmp.Equal(got, tt.want) {
			t.Errorf("stopError(%v, %v) = %v, want %v", refusal, tt.filter, got, tt.want)
		}
	}
	if got := stopError(nil, nil); got != nil {
		t.Errorf("stopError(nil, nil) = %v", got)
	}
}
