package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/internal/openaitest"
)

// model answers as a model would, by what each request is: the latent
// classify call, the delegate's sub-run, or a step of the main loop.
type model struct {
	mu    sync.Mutex
	steps []string // bodies of the main loop's requests
}

func (m *model) answer(body []byte) string {
	s := string(body)
	switch {
	case strings.Contains(s, "You are a support agent"): // the main loop, below
	case strings.Contains(s, "Carry out the tool classify"):
		return `{"output":{"category":"billing","urgency":"high"}}`
	case strings.Contains(s, "short, warm replies"):
		return `{"output":{"reply":"Sorry about the double charge: your 25 EUR are on their way back."}}`
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, s)
	if len(m.steps) == 1 {
		return `{"calls":[
			{"_tool":"classify","message":"†input.message","_outputPath":"†state.class"},
			{"_tool":"refund","order":"1042","amount":25,"currency":"EUR","_outputPath":"†state.refund"},
			{"_tool":"draft_reply","message":"†input.message","category":"†state.class.category","facts":"refund of 25 EUR issued","_outputPath":"†state.draft"}],
			"output":null}`
	}
	if strings.Contains(s, "(refund) failed: rejected error") {
		return `{"calls":[],"output":{"reply":"Sorry, we cannot refund this order.","refunded":false}}`
	}
	return `{"calls":[],"output":{"reply":"Sorry about the double charge: your 25 EUR are on their way back.","refunded":true}}`
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSupport(t *testing.T) {
	const msg = "I was charged twice for order 1042, please refund the 25 EUR"
	for _, tt := range []struct {
		name, stdin string
		refunded    bool   // the refund activity ran
		reason      string // what the model is told when it did not
	}{
		{"approved", "y\n", true, ""},
		{"refused with a reason", "the order is older than 90 days\n", false, "the order is older than 90 days"},
		{"refused", "\n", false, "the refund was not approved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &model{}
			srv := openaitest.Server(t, m.answer)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{msg}, strings.NewReader(tt.stdin), &stdout, &stderr,
				env(map[string]string{"OPENAI_API_KEY": "test"}), srv.URL)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out, log := stdout.String(), stderr.String()
			if !strings.Contains(out, `approve refund {"order":"1042","amount":25,"currency":"EUR"}?`) ||
				!strings.Contains(out, fmt.Sprintf("(refunded: %v; 2 steps", tt.refunded)) {
				t.Errorf("stdout %q", out)
			}
			// The latent call's result, then the delegate's, were written.
			if !strings.Contains(log, `†state.class = {"class":{"category":"billing","urgency":"high"}}`) ||
				!strings.Contains(log, "†state.draft = ") {
				t.Errorf("stderr %q", log)
			}
			if got := strings.Contains(log, `†state.refund = {"refund":{"amount":"25.00 EUR"`); got != tt.refunded {
				t.Errorf("refund ran: %v; stderr %q", got, log)
			}
			if len(m.steps) != 2 {
				t.Fatalf("%d main requests", len(m.steps))
			}
			if tt.reason != "" && !strings.Contains(m.steps[1], tt.reason) {
				t.Errorf("the second request does not tell the model why the refund was refused")
			}
		})
	}
}

func TestSupportNeedsAModel(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"hi"}, strings.NewReader(""), &bytes.Buffer{}, &stderr, env(nil), ""); code != 2 ||
		!strings.Contains(stderr.String(), "needs a model") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
	if code := run(context.Background(), nil, strings.NewReader(""), &bytes.Buffer{}, &stderr, env(nil), ""); code != 2 {
		t.Errorf("no message: exit %d", code)
	}
	// A model named without its provider, or the reverse, is refused
	// before anything runs, in the terms of the variable.
	for _, spec := range []string{"openai", "openai:", "gpt-5-mini"} {
		stderr.Reset()
		code := run(context.Background(), []string{"hi"}, strings.NewReader(""), &bytes.Buffer{}, &stderr,
			env(map[string]string{"ACTS_MODEL": spec, "OPENAI_API_KEY": "test"}), "http://127.0.0.1:1/v1")
		if want := fmt.Sprintf("support: ACTS_MODEL=%q is not provider:model (openai:gpt-5-mini, say)\n", spec); code != 2 || stderr.String() != want {
			t.Errorf("ACTS_MODEL=%s: exit %d, %q; want 2, %q", spec, code, stderr.String(), want)
		}
	}
}
