package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestReplayErrorStatuses replays the error bodies the API sends, whole
// and for a streamed request, through provider.Retry: each is a
// *provider.Error with the status, the google.rpc code and the API's
// message as sent; only the temporary ones (500, 503, 429) are sent again.
func TestReplayErrorStatuses(t *testing.T) {
	for _, tt := range []struct {
		name      string
		file      string
		status    int
		code      string
		temporary bool
	}{
		{"schema too complex", "error_400_schema.json", 400, "INVALID_ARGUMENT", false},
		{"candidateCount refused", "error_400_candidates.json", 400, "INVALID_ARGUMENT", false},
		{"API key not valid", "error_400_key.json", 400, "INVALID_ARGUMENT", false},
		{"no API key", "error_403.json", 403, "PERMISSION_DENIED", false},
		{"model not found", "error_404.json", 404, "NOT_FOUND", false},
		{"quota", "error_429.json", 429, "RESOURCE_EXHAUSTED", true},
		{"internal", "error_500.json", 500, "INTERNAL", true},
		{"overloaded", "error_503.json", 503, "UNAVAILABLE", true},
	} {
		body, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		var wire struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &wire); err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				var n atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					w.Header().Set("Content-Type", "application/json; charset=UTF-8")
					w.WriteHeader(tt.status)
					w.Write(body)
				}))
				defer srv.Close()
				p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
				if err != nil {
					t.Fatal(err)
				}
				r := provider.Retry(p, provider.RetryConfig{Attempts: 1, Sleep: func(context.Context, time.Duration) error { return nil }})
				_, err = provider.Collect(r.Generate(context.Background(), &provider.Request{Stream: stream}))
				pe, ok := errors.AsType[*provider.Error](err)
				if !ok {
					t.Fatalf("got %T %v, want a *provider.Error", err, err)
				}
				if pe.Status != tt.status || pe.Code != tt.code || pe.Err == nil || pe.Err.Error() != wire.Error.Message {
					t.Errorf("got %d %q %q, want %d %q %q", pe.Status, pe.Code, pe.Err, tt.status, tt.code, wire.Error.Message)
				}
				if pe.Temporary() != tt.temporary {
					t.Errorf("Temporary() = %v", pe.Temporary())
				}
				want := int32(1)
				if tt.temporary {
					want = 2
				}
				if got := n.Load(); got != want {
					t.Errorf("%d requests, want %d", got, want)
				}
			})
		}
	}
}

// TestStreamErrorEvents: an error event after some text, whatever its
// code, ends the stream with a *provider.Error of that status after the
// text; a stream that ends without a finishReason is cut.
func TestStreamErrorEvents(t *testing.T) {
	const text = `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"index":0}]}` + "\r\n\r\n"
	for _, tt := range []struct {
		name   string
		events string
		want   *provider.Error
		wantIs error
	}{
		{"internal", text + `data: {"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}` + "\r\n\r\n",
			&provider.Error{Provider: "gemini", Status: 500, Code: "INTERNAL", Err: errors.New("An internal error has occurred.")}, nil},
		{"deadline", text + `data: {"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}` + "\r\n\r\n",
			&provider.Error{Provider: "gemini", Status: 504, Code: "DEADLINE_EXCEEDED", Err: errors.New("Deadline expired before operation could complete.")}, nil},
		{"no finishReason", text, nil, provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, tt.events)
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			got, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: true}))
			if diff := cmp.Diff(got.Texts, []string{`{"output":`}); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if tt.wantIs != nil {
				if !errors.Is(err, tt.wantIs) {
					t.Errorf("got %v, want %v", err, tt.wantIs)
				}
				return
			}
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("got %T %v", err, err)
			}
			tt.want.Model = testModel
			if diff := cmp.Diff(pe, tt.want, cmp.Comparer(func(a, b error) bool { return a.Error() == b.Error() })); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
		})
	}
}

// TestPlainErrorBody: an error body that is not the API's JSON, as a
// proxy in front of it sends (Envoy's "upstream connect error…" in plain
// text, ending with a newline), is the message, without its trailing
// newline, streamed or not.
func TestPlainErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "upstream connect error or disconnect/reset before headers. reset reason: overflow\n")
	}))
	defer srv.Close()
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		_, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Stream: stream}))
		const want = "gemini gemini-test: 503 Service Unavailable: upstream connect error or disconnect/reset before headers. reset reason: overflow"
		if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Error() != want || !pe.Temporary() {
			t.Errorf("stream=%v: got %q, want %q, temporary", stream, err, want)
		}
	}
}
