package anthropic

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestCutAfterFinish: a stream that breaks after the message_delta whose
// stop_reason says the answer ended well (end_turn), before message_stop,
// lost nothing: it ends as at message_stop, with the usage message_delta
// said, which is the whole of it. A stream cut before that message_delta,
// or after one whose stop_reason is max_tokens or a refusal, fails as
// before.
func TestCutAfterFinish(t *testing.T) {
	delta := func(reason string) string {
		return "event: content_block_stop\n" +
			`data: {"type":"content_block_stop","index":0}` + "\n\n" +
			"event: message_delta\n" +
			fmt.Sprintf(`data: {"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":9}}`, reason) + "\n\n"
	}
	const answer = `{"output":"red"}`
	for _, tt := range []struct {
		name       string
		body       string
		reset      bool // the connection is cut after body; else the body ends
		wantFinish string
		wantUsage  provider.Usage
		wantErr    error // nil: none
	}{
		{"cut after end_turn", startEvent(30, 1) + deltaEvent(answer) + delta(`"end_turn"`), true, "end_turn", provider.Usage{Input: 30, Output: 9}, nil},
		{"ended after end_turn", startEvent(30, 1) + deltaEvent(answer) + delta(`"end_turn"`), false, "end_turn", provider.Usage{Input: 30, Output: 9}, nil},
		{"cut after stop_sequence", startEvent(30, 1) + deltaEvent(answer) + delta(`"stop_sequence"`), true, "stop_sequence", provider.Usage{Input: 30, Output: 9}, nil},
		{"whole", startEvent(30, 1) + deltaEvent(answer) + endEvents(9), false, "end_turn", provider.Usage{Input: 30, Output: 9}, nil},
		{"cut before message_delta", startEvent(30, 1) + deltaEvent(answer), true, "", provider.Usage{Input: 30, Output: 1}, provider.ErrTruncated},
		{"cut after a message_delta with no stop_reason", startEvent(30, 1) + deltaEvent(answer) + delta("null"), true, "", provider.Usage{Input: 30, Output: 9}, provider.ErrTruncated},
		{"cut after max_tokens", startEvent(30, 1) + deltaEvent(answer) + delta(`"max_tokens"`), true, "", provider.Usage{Input: 30, Output: 9}, provider.ErrTruncated},
		{"cut after a refusal", startEvent(30, 1) + deltaEvent(answer) + delta(`"refusal"`), true, "", provider.Usage{Input: 30, Output: 9}, provider.ErrTruncated},
		{"error event after end_turn", startEvent(30, 1) + deltaEvent(answer) + delta(`"end_turn"`) + overloadedEvent, false, "", provider.Usage{Input: 30, Output: 9}, &provider.Error{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				writeSSE(w, tt.body)
				if !tt.reset {
					return
				}
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close() // the chunked body never ends
			})
			p, _ := newTestServer(t, h, Config{})
			res, err := provider.Collect(p.Generate(t.Context(), request(true, 1)))
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("error %v", err)
				}
			case *provider.Error:
				if _, ok := errors.AsType[*provider.Error](err); !ok {
					t.Fatalf("error %v, want a *provider.Error", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
			}
			if got := strings.Join(res.Texts, ""); got != answer {
				t.Errorf("text %q, want %q", got, answer)
			}
			if diff := cmp.Diff(res.FinishReasons, []string{tt.wantFinish}); diff != "" {
				t.Errorf("finish reasons (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
			if res.UsageLost {
				t.Error("UsageLost, though message_delta said the usage")
			}
		})
	}
}
