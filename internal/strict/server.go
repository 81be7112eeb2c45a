package strict

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Request is one request a strict server received, decoded.
type Request struct {
	// Provider is the wire format: "openai", "anthropic" or "gemini".
	Provider string
	// Field says where the schema came: "response_format",
	// "output_config.format", "tools/<name>", "responseSchema" or
	// "responseJsonSchema"; empty when the request had none.
	Field string
	// Schema is the schema as sent, nil when none.
	Schema json.RawMessage
	// Strict tells whether the provider enforces Schema (OpenAI's strict,
	// Anthropic's output format or strict tool, any Gemini schema).
	Strict bool
	// Messages is the conversation as text, the system messages first.
	Messages []Message
	// Stream tells whether the request asked for a stream.
	Stream bool
	// N is the number of solutions asked for (at least 1).
	N int
	// Body is the request body.
	Body json.RawMessage
	// Cache is what the request read from and wrote to the prompt cache,
	// for a provider whose cache the server models (Anthropic's).
	Cache Cache
}

// Text returns every message's text, one after the other.
func (r *Request) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// Message is one message of a request.
type Message struct {
	Role string // "system", "user" or "assistant" ("model" for Gemini)
	Text string
}

// Answer returns the text of solution i of req, 0 ≤ i < req.N. It is
// called on the server's goroutines, one request at a time.
type Answer func(req *Request, i int) (string, error)

// Server is a fake provider API that speaks one provider's real wire
// format. It checks the schema of every request against the provider's
// strict rules, answers a request that breaks them with the provider's
// HTTP 400 error, and answers the others with solutions from its Answer.
// It is closed when the test ends.
type Server struct {
	// URL is the server's root, to give an adapter as its base URL.
	URL string

	t        testing.TB
	provider string
	answer   Answer
	srv      *httptest.Server

	mu        sync.Mutex // guards what follows, and serialises answers
	tolerate  []Rule
	requests  []*Request
	rejected  []error
	tolerated []error
	cache     anthropicCache
	now       time.Duration // the clock of the cache, moved by Advance
}

// Advance moves the clock of the server's prompt cache by d: entries
// older than their lifetime are gone.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now += d
}

// Tolerate lets requests whose violations are all of the given rules
// through: they are answered, and their *Error is kept in Tolerated. Use
// it to show a known defect without failing every request on it.
func (s *Server) Tolerate(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tolerate = append(s.tolerate, rules...)
}

// Requests returns the requests received so far, rejected ones included.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Rejected returns the schema errors of the requests answered with 400.
func (s *Server) Rejected() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rejected)
}

// Tolerated returns the schema errors let through by Tolerate.
func (s *Server) Tolerated() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tolerated)
}

func newServer(t testing.TB, provider string, answer Answer, h func(s *Server, w http.ResponseWriter, r *http.Request, body []byte)) *Server {
	s := &Server{t: t, provider: provider, answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("strict %s server: read body: %v", provider, err)
			return
		}
		if r.Method != http.MethodPost {
			t.Errorf("strict %s server: %s %s", provider, r.Method, r.URL.Path)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h(s, w, r, body)
	}))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// admit records req and checks it; err is what the checker found. It
// reports whether the request is to be answered.
func (s *Server) admit(req *Request, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if err == nil {
		return true
	}
	var e *Error
	if errors.As(err, &e) && len(s.tolerate) > 0 && !slices.ContainsFunc(e.Violations, func(v Violation) bool {
		return !slices.Contains(s.tolerate, v.Rule)
	}) {
		s.tolerated = append(s.tolerated, err)
		return true
	}
	s.rejected = append(s.rejected, err)
	return false
}

// solutions asks the Answer for each solution of req.
func (s *Server) solutions(req *Request) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, req.N)
	for i := range out {
		text, err := s.answer(req, i)
		if err != nil {
			return nil, fmt.Errorf("strict %s server: answer %d: %w", s.provider, i, err)
		}
		out[i] = text
	}
	return out, nil
}

// firstViolation returns the first violation of a checker's error.
func firstViolation(err error) Violation {
	var e *Error
	if errors.As(err, &e) && len(e.Violations) > 0 {
		return e.Violations[0]
	}
	return Violation{Rule: RuleJSON, Detail: err.Error()}
}

// Pieces splits s into pieces of about n bytes (n > 0), on rune
// boundaries, as a stream delivers them: the fake servers here stream
// with it, and so do the adapters' own fakes and benchmarks.
func Pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i := min(n, len(s))
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// js encodes v as JSON.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// pointerTokens splits a JSON pointer into its unescaped tokens.
func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		toks[i] = unescape(t)
	}
	return toks
}
