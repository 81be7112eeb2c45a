package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Provider generates solutions for a rendered request.
//
// Generate returns a single-use stream of chunks: the text of each
// solution arrives in order, chunks of different solutions (Request.N > 1)
// may interleave, and the last chunk of the stream carries the usage of the
// whole call. A stream that fails after the provider counted tokens yields
// what it reported of them before its error, on a chunk that may carry
// nothing else (see [Chunk.Usage]): a failed call may be billed all the
// same. A non-streaming provider yields one chunk per solution. The
// stream runs on the caller's goroutine; breaking out of it cancels the
// underlying HTTP request. ctx cancellation ends the stream with ctx.Err().
// Generate must not modify req, and may be called concurrently.
type Provider interface {
	Generate(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]
}

// Func adapts a function to a Provider.
type Func func(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]

// Generate calls f.
func (f Func) Generate(ctx context.Context, req *Request) iter.Seq2[*Chunk, error] {
	return f(ctx, req)
}

// Endpoint says where a provider sends its requests. A durable run saves
// it with its settings (never an API key), so that a resume calls the
// same server, and says which.
type Endpoint struct {
	Provider string `json:"provider"`          // the adapter: "openai", "anthropic", "gemini"
	BaseURL  string `json:"baseURL,omitempty"` // the API's root
	// Model is the model a Request that names none is sent to: the
	// adapter's configured default, empty when it has none.
	Model string `json:"model,omitempty"`
}

// Describer is a Provider that says its Endpoint.
type Describer interface {
	Endpoint() Endpoint
}

// Request is one LLM invocation after the message handlers have run.
type Request struct {
	// Model names the model; empty means the adapter's configured default.
	Model string
	// Messages is the rendered conversation, in order.
	Messages []Message
	// Schema is the full composed JSON Schema the answer must follow.
	// Adapters send their dialect of it; the caller validates against this.
	// Nil asks for free text.
	Schema json.RawMessage
	// SchemaName names the schema where the API wants a name ("solution").
	SchemaName string
	// N is the number of solutions wanted; 0 means 1.
	N int
	// Stream asks for incremental chunks instead of one per solution.
	Stream bool
	// Temperature, when set, is passed on.
	Temperature *float64
	// MaxTokens bounds the output; 0 means the adapter's default.
	MaxTokens int
	// Thinking is the reasoning budget in tokens: 0 leaves the provider's
	// default, a negative value turns thinking off where that is possible.
	// Each adapter maps it onto its own setting.
	Thinking int
	// CacheKey names the group of requests that share a prefix, for
	// providers that route requests to their prompt cache by a key
	// (OpenAI's prompt_cache_key); empty sends none.
	CacheKey string
	// CacheRetention is how long the provider should keep the request's
	// prefix in its prompt cache; empty is the provider's default.
	CacheRetention CacheRetention
}

// CacheRetention is how long a provider keeps what a request wrote to its
// prompt cache. A cache entry read again is kept again, so a run whose
// requests follow each other within minutes keeps its prefix cached with
// the default; a longer retention pays off where requests come further
// apart: a conversation whose user takes time to answer, a run waiting
// on a slow activity or a confirmation.
type CacheRetention string

const (
	// CacheDefault leaves the retention unset: the provider's default.
	// A durable run given none keeps the one it was made with (see
	// agent.Config.CacheRetention).
	CacheDefault CacheRetention = ""
	// CacheShort is the provider's default retention, said outright:
	// about five minutes (Anthropic's 5-minute entries, OpenAI's
	// in-memory cache). A run made with CacheLong goes back to it so.
	CacheShort CacheRetention = "short"
	// CacheLong asks for the longest retention the provider offers.
	// Anthropic writes entries that last an hour, at twice the input
	// price where a 5-minute entry costs 1.25 times (reads cost the
	// same); Usage.CacheWriteLong counts them. The OpenAI adapter sends
	// nothing: its models keep prefixes long already, and no field fits
	// them all. Gemini's implicit cache has no such setting, and ignores
	// it.
	CacheLong CacheRetention = "long"
)

// ErrCacheRetention reports a CacheRetention that is not one of the
// above.
var ErrCacheRetention = errors.New("unknown cache retention")

// Check reports whether r is a known retention, with an error wrapping
// ErrCacheRetention if not.
func (r CacheRetention) Check() error {
	switch r {
	case CacheDefault, CacheShort, CacheLong:
		return nil
	}
	return fmt.Errorf("%w %q (use %q or %q, or leave it empty)", ErrCacheRetention, string(r), CacheShort, CacheLong)
}

// Message is one rendered message.
type Message struct {
	Role Role
	Text string
	// Stable marks a message that ends a prefix the rest of the run will
	// send again unchanged: a provider with explicit cache breakpoints
	// (Anthropic's cache_control) puts one after it.
	Stable bool
}

// Role is who speaks a message.
type Role string

// The roles a rendered message can have.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Chunk is a piece of a provider's answer.
type Chunk struct {
	// Index is the solution this chunk belongs to, 0 ≤ Index < N.
	Index int
	// Text continues the solution's JSON text.
	Text string
	// Thinking continues the model's visible reasoning, where exposed.
	Thinking string
	// Done marks the last chunk of solution Index; FinishReason says why
	// it ended ("stop", "length", "content_filter", ...), as the provider
	// reported it.
	Done         bool
	FinishReason string
	// Usage is set on the last chunk of the stream. A stream that fails
	// sets it, when the provider had said any of it, on a chunk before
	// the error: the tokens counted until then (Anthropic's input
	// tokens from message_start, Gemini's latest usageMetadata), since the
	// provider may bill them. Such a chunk may carry Usage alone, with no
	// Text, Thinking or Done: it belongs to no solution. A consumer sums
	// the Usage of every chunk, as [Collect] does.
	Usage *Usage
	// UsageLost, on the last chunk, says that the provider did not say
	// the usage of the call: the stream broke after every solution had
	// ended well, before the usage (OpenAI says it in a chunk of its own,
	// after the finish_reasons), or the server does not report usage (an
	// OpenAI-compatible server that ignores stream_options.include_usage).
	// The solutions stand, but Usage lacks what the call was billed.
	UsageLost bool
	// Model is the model that answered, as the provider named it (often a
	// dated version of the one asked for: "gpt-5-mini-2025-08-07"). It is
	// set with Usage, on the last chunk, when the response said it.
	Model string
	// ResponseID is the provider's id of the response (OpenAI's chat
	// completion id, Anthropic's message id, Gemini's responseId), set
	// with Model, when the response said it. Where the adapter makes one
	// request per solution (Anthropic with N > 1), it is that of the
	// request that ended last, as Model is.
	ResponseID string
}

// Usage counts tokens, normalised across providers: Input excludes cached
// tokens (OpenAI counts them in its prompt tokens, Anthropic does not), so
// Input + CacheRead + CacheWrite is everything read, and Output excludes
// Thinking, so Output + Thinking is everything generated.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	Thinking   int `json:"thinking,omitempty"`
	CacheRead  int `json:"cacheRead,omitempty"`
	CacheWrite int `json:"cacheWrite,omitempty"`
	// CacheWriteLong is the part of CacheWrite written for a long
	// retention (CacheLong), which Anthropic bills higher.
	CacheWriteLong int `json:"cacheWriteLong,omitempty"`
}

// Add adds u2 to u.
func (u *Usage) Add(u2 Usage) {
	u.Input += u2.Input
	u.Output += u2.Output
	u.Thinking += u2.Thinking
	u.CacheRead += u2.CacheRead
	u.CacheWrite += u2.CacheWrite
	u.CacheWriteLong += u2.CacheWriteLong
}

// CacheHitRate returns the share of the input read from the prompt
// cache: CacheRead over everything read; 0 when nothing was read.
func (u Usage) CacheHitRate() float64 {
	read := u.Input + u.CacheRead + u.CacheWrite
	if read == 0 {
		return 0
	}
	return float64(u.CacheRead) / float64(read)
}

// UsageOnly reports whether c carries nothing of a solution: no Text,
// Thinking or Done, as a chunk that only says usage (see [Chunk.Usage]).
func (c *Chunk) UsageOnly() bool {
	return c.Text == "" && c.Thinking == "" && !c.Done
}

// Total returns every token read and generated.
func (u Usage) Total() int {
	return u.Input + u.Output + u.Thinking + u.CacheRead + u.CacheWrite
}

// Result is a whole answer gathered from a stream.
type Result struct {
	Texts         []string // one per solution
	Thinking      []string // one per solution, empty when not exposed
	FinishReasons []string
	Usage         Usage
	UsageLost     bool // a chunk said so (see [Chunk.UsageLost])
}

// Collect drains a stream into a Result. On error it returns what had
// arrived so far along with the error.
func Collect(seq iter.Seq2[*Chunk, error]) (*Result, error) {
	var texts, thinking []*strings.Builder // pointers: a Builder must not be copied once used
	r := &Result{}
	grow := func(i int) {
		for len(texts) <= i {
			texts = append(texts, &strings.Builder{})
			thinking = append(thinking, &strings.Builder{})
			r.FinishReasons = append(r.FinishReasons, "")
		}
	}
	var err error
	for c, e := range seq {
		if e != nil {
			err = e
			break
		}
		grow(c.Index)
		texts[c.Index].WriteString(c.Text)
		thinking[c.Index].WriteString(c.Thinking)
		if c.Done {
			r.FinishReasons[c.Index] = c.FinishReason
		}
		if c.Usage != nil {
			r.Usage.Add(*c.Usage)
		}
		r.UsageLost = r.UsageLost || c.UsageLost
	}
	for i := range texts {
		r.Texts = append(r.Texts, texts[i].String())
		r.Thinking = append(r.Thinking, thinking[i].String())
	}
	return r, err
}
