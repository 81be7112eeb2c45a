package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// stoppedAnswer is one case of testStoppedAnswers: an answer the API
// stopped for reason, cut or not, and the requests sent before the
// request ends.
type stoppedAnswer struct {
	reason   string
	wantCut  bool
	wantSent int32
}

// testStoppedAnswers runs, whole and streamed, a request for {"n":…}
// against a server whose every answer write gives as `{"output":{"n":12`
// stopped for the case's reason, through the provider newProvider makes.
// A cut answer must end with an InvalidError wrapping ErrAnswerCut; any
// other with an error checkStop accepts.
func testStoppedAnswers(t *testing.T, cases []stoppedAnswer,
	write func(w http.ResponseWriter, stream bool, reason string),
	newProvider func(url string) (provider.Provider, error),
	checkStop func(t *testing.T, err error, reason string)) {
	t.Helper()
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range cases {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				var sent atomic.Int32
				_, err := stoppedRequest(t, func(w http.ResponseWriter, r *http.Request) {
					sent.Add(1)
					write(w, stream, tt.reason)
				}, newProvider, agent.Config{MaxRepairs: 1, Stream: stream}, out)
				if tt.wantCut {
					if inv, ok := errors.AsType[*agent.InvalidError](err); !ok || !errors.Is(err, agent.ErrAnswerCut) || inv.Raw != `{"output":{"n":12` {
						t.Errorf("got %v, want an InvalidError wrapping ErrAnswerCut", err)
					}
				} else {
					checkStop(t, err, tt.reason)
				}
				if got := sent.Load(); got != tt.wantSent {
					t.Errorf("%d requests, want %d", got, tt.wantSent)
				}
			})
		}
	}
}

// stoppedRequest runs a request for out, with cfg's settings, against a
// server answering with h, through the provider newProvider makes for
// the server's URL. The server is closed, its handlers done, on return.
func stoppedRequest(t *testing.T, h http.HandlerFunc, newProvider func(url string) (provider.Provider, error), cfg agent.Config, out json.RawMessage) (resp *agent.Response, err error) {
	t.Helper()
	withServer(t, h, newProvider, func(p provider.Provider) {
		cfg.Provider, cfg.Registry = p, agent.NewRegistry()
		resp, err = agent.Request(context.Background(), cfg, out, []message.Message{message.Text("count")})
	})
	return resp, err
}

// solutionOutputs returns the output of each solution of resp.
func solutionOutputs(resp *agent.Response) []string {
	var out []string
	for _, s := range resp.Solutions {
		out = append(out, string(s.Output))
	}
	return out
}
