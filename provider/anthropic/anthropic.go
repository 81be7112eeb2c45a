package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/apierr"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/provider/internal/stops"
)

// Defaults of [Config].
const (
	// DefaultModel is the model used when neither Request.Model nor
	// Config.Model names one. It supports structured outputs and
	// budget-based thinking.
	DefaultModel = "claude-sonnet-4-6"
	// DefaultMaxTokens bounds the answer when neither Request.MaxTokens nor
	// Config.MaxTokens does; the Messages API requires max_tokens.
	DefaultMaxTokens = 8192
	// MinThinkingBudget is the smallest thinking budget the API accepts; a
	// smaller positive Request.Thinking is raised to it.
	MinThinkingBudget = 1024
	// DefaultConnectTimeout bounds dialing and the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultFirstByteTimeout bounds the wait for the first byte of the
	// response body. It covers a whole non-streamed answer, hence its
	// length.
	DefaultFirstByteTimeout = 5 * time.Minute
	// DefaultIdleTimeout bounds the silence between two pieces of a
	// stream (the API sends ping events while the model works).
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxAnswerBytes caps the size of one answer.
	DefaultMaxAnswerBytes = 8 << 20
)

// Environment variables read by [New] for the zero fields of [Config].
const (
	// EnvAPIKey holds the API key when Config.APIKey is empty.
	EnvAPIKey = "ANTHROPIC_API_KEY"
	// EnvBaseURL holds the API's address when Config.BaseURL is empty.
	EnvBaseURL = "ANTHROPIC_BASE_URL"
)

// Config configures a [Provider]. The zero value of every field is a
// documented default; only an API key is required, from the field or the
// environment.
type Config struct {
	// APIKey is sent in the x-api-key header. Empty means the
	// ANTHROPIC_API_KEY environment variable; New fails with
	// [provider.ErrNoKey] when both are empty. No other credential source
	// of the SDK (auth tokens, profiles, federation) is consulted.
	APIKey string
	// BaseURL is the API's address, such as a proxy's. Empty means the
	// ANTHROPIC_BASE_URL environment variable, and then the SDK's default,
	// https://api.anthropic.com/.
	BaseURL string
	// Model is used when Request.Model is empty; empty means [DefaultModel].
	Model string
	// HTTPClient sends the requests; nil means a client with
	// http.DefaultTransport. The Provider uses a copy whose transport is
	// wrapped to enforce the timeouts below, so the client passed in is
	// not changed.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialing and the TLS handshake; 0 means
	// [DefaultConnectTimeout], negative means none. Generate then fails
	// with a *provider.TimeoutError of provider.PhaseConnect.
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds the wait from the connection to the first
	// byte of the response body (the headers and the first event of a
	// stream, the whole answer otherwise); 0 means
	// [DefaultFirstByteTimeout], negative means none.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds how long a read of the response body waits for
	// the server once its first byte arrived: the server's silence, not
	// the time the consumer takes between two chunks. 0 means
	// [DefaultIdleTimeout], negative means none.
	IdleTimeout time.Duration
	// MaxAnswerBytes caps one answer: the text and thinking of all the
	// solutions of a call, or the body of a response that does not
	// stream. Past it Generate ends with a *provider.LimitError. 0 means
	// [DefaultMaxAnswerBytes], negative means no cap.
	MaxAnswerBytes int64
	// MaxTokens bounds the answer when Request.MaxTokens is 0; 0 means
	// [DefaultMaxTokens]. A thinking budget comes on top of it.
	MaxTokens int
	// ToolOutput asks for the solution through one forced tool call (its
	// input_schema is the adapted schema, tool_choice names it) instead of
	// native structured outputs (output_config.format). Use it for models
	// that lack structured outputs. The solution is then the tool's input.
	ToolOutput bool
}

// Provider generates solutions with Anthropic's Messages API. It is safe for
// concurrent use.
type Provider struct {
	client     sdk.Client
	baseURL    string
	model      string
	maxTokens  int
	toolOutput bool
	maxBytes   int64 // the cap on an answer, 0 for none
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg, with the SDK's own retries turned off:
// wrap it in [provider.Retry] to retry.
func New(cfg Config) (*Provider, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvAPIKey)
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w: set Config.APIKey or %s", provider.ErrNoKey, EnvAPIKey)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv(EnvBaseURL)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: negative MaxTokens %d", cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	maxBytes := limit.Or(cfg.MaxAnswerBytes, DefaultMaxAnswerBytes)
	opts = append(opts, option.WithHTTPClient(limit.Client(cfg.HTTPClient, limit.Config{
		Provider:  "anthropic",
		Connect:   limit.Or(cfg.ConnectTimeout, DefaultConnectTimeout),
		FirstByte: limit.Or(cfg.FirstByteTimeout, DefaultFirstByteTimeout),
		Idle:      limit.Or(cfg.IdleTimeout, DefaultIdleTimeout),
		MaxBody:   maxBytes,
	})))
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return &Provider{
		baseURL:    baseURL,
		maxBytes:   maxBytes,
		client:     sdk.NewClient(opts...),
		model:      cfg.Model,
		maxTokens:  cfg.MaxTokens,
		toolOutput: cfg.ToolOutput,
	}, nil
}

// Generate sends req to the Messages API and streams the solutions back; see
// [provider.Provider]. The stream is single-use. Request.N > 1 sends N
// requests at once, since the API has no n, and yields their chunks
// solution by solution in Index order; the usage on the last chunk is
// their sum.
//
// Errors: ctx.Err() when ctx ends; a *provider.Error for an error response
// or an error event; a *provider.TimeoutError when a timeout of Config
// fires; a *provider.LimitError past Config.MaxAnswerBytes; an error
// wrapping provider.ErrNoAnswer for a network error before any byte of the
// answer, and one wrapping provider.ErrTruncated for a stream cut after
// (but before message_delta said the answer ended well: a stream cut after
// that ends as at message_stop); a *[StopError], after the chunks of every solution, for one that a
// refusal or the model's context window stopped; when a request fails
// all the same, its error wraps that *StopError too.
func (p *Provider) Generate(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		c, err := p.newCall(req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield = apierr.WithModel(yield, string(c.params.Model))
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if n := max(req.N, 1); n > 1 {
			fanOut(ctx, c, n, yield)
			return
		}
		for chunk, err := range c.solution(ctx, 0, nil) {
			if !yield(chunk, err) || err != nil {
				return
			}
		}
	}
}

// indexKey carries the index of a solution on the context of its HTTP
// request, so that the tests' transport can tell the N otherwise identical
// requests of a call apart.
type indexKey struct{}

func withIndex(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, indexKey{}, i)
}

// solutionIndex returns the index of the solution a request is for, 0 when
// the call asked for one.
func solutionIndex(ctx context.Context) int {
	i, _ := ctx.Value(indexKey{}).(int)
	return i
}

// fanOut runs the n requests of a call concurrently and yields their chunks
// on the caller's goroutine, solution by solution: solution 0 streams live
// while the chunks of the others wait in a buffer for their turn, so the
// order of the chunks never depends on which request was faster. It
// returns only after every request stopped, so no goroutine outlives it,
// whether the consumer breaks or a request fails.
//
// A request that fails does not stop those whose response began: they are
// paid for, and a solution that arrives whole stands (see agent.Config.N),
// so they stream to their end, and the error, the first one, ends the
// stream after them. What the failed request's API counted comes before it
// (see provider.Chunk.Usage). Those whose response has not begun are
// cancelled, as is every other request of a call that is not streamed on
// the wire, whose response is whole or nothing.
//
// With c.stagger, requests 1 to n-1 are sent once the response to request
// 0 begins: the API makes a cache entry available only then, so requests
// sent together would each write the prompt to the cache, at 1.25× the
// input price, where the later ones now read it at 0.1×. When request 0
// fails before, the others are never sent.
func fanOut(ctx context.Context, c *call, n int, yield func(*provider.Chunk, error) bool) {
	type item struct {
		index int // the solution
		chunk *provider.Chunk
		err   error
		stop  *StopError // with a Done chunk: the error that followed it
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // runs after cancel, which unblocks the workers
	defer cancel()
	items := make(chan item)
	// first is closed once request 0's response began, zero once request
	// 0 ended.
	first, zero := make(chan struct{}), make(chan struct{})
	began := sync.OnceFunc(func() { close(first) })
	// Each request has its own context, so that a failure cancels only
	// those not begun.
	var (
		mu      sync.Mutex
		begun   = make([]bool, n)
		cancels = make([]context.CancelFunc, n)
		unsaid  provider.Usage // what requests counted that could not be sent, the caller gone
	)
	// spare cancels the requests whose response has not begun.
	spare := func() {
		mu.Lock()
		defer mu.Unlock()
		for i, b := range begun {
			if !b {
				cancels[i]()
			}
		}
	}
	for i := range n {
		rctx, rcancel := context.WithCancel(ctx)
		cancels[i] = rcancel
		wg.Go(func() {
			defer rcancel()
			if i == 0 {
				defer close(zero)
			}
			if i > 0 && c.stagger {
				select {
				case <-first:
				case <-zero:
					select {
					case <-first:
					default: // request 0 failed before its response began
						return
					}
				case <-rctx.Done():
					return
				}
			}
			onBegin := func() {
				mu.Lock()
				begun[i] = true
				mu.Unlock()
				if i == 0 {
					began()
				}
			}
			send := func(it item) bool {
				it.index = i
				select {
				case items <- it:
					return true
				case <-ctx.Done():
					return false
				}
			}
			// The Done chunk, the solution's last, waits for the
			// *StopError that may follow it, so that both arrive
			// together, before the stream may end.
			//
			// Once the caller is gone (cancelled, or stopped reading), the
			// request is read to its end, which comes at once, its context
			// being cancelled too: the tokens it was billed come with the
			// cancellation's error (see below).
			var done item
			gone := false
			for chunk, err := range c.solution(withIndex(rctx, i), i, onBegin) {
				if gone {
					if chunk != nil && chunk.Usage != nil {
						mu.Lock()
						unsaid.Add(*chunk.Usage)
						mu.Unlock()
					}
					continue
				}
				if se, ok := err.(*StopError); ok && done.chunk != nil {
					done.stop = se
					break
				}
				if err == nil && chunk.Done {
					done.chunk = chunk
					continue
				}
				if !send(item{chunk: chunk, err: err}) {
					gone = true
					if chunk != nil && chunk.Usage != nil {
						mu.Lock()
						unsaid.Add(*chunk.Usage)
						mu.Unlock()
					}
					continue
				}
				if err != nil {
					return
				}
			}
			if done.chunk != nil && !send(done) && done.chunk.Usage != nil {
				mu.Lock()
				unsaid.Add(*done.chunk.Usage)
				mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		close(items)
	}()
	var (
		total    provider.Usage
		model    string                         // the model the last finished request named
		id       string                         // and its response id
		reported bool                           // whether total went out
		failed   error                          // the first request's error
		stop     *StopError                     // the lowest solution the API stopped
		stopped  []int                          // every solution the API stopped
		pending  = make([][]*provider.Chunk, n) // chunks of the solutions after cur
		ended    = make([]bool, n)              // whether pending[i] ends its solution
		cur      int                            // the solution being yielded live
	)
	// emit yields a chunk; the Done chunk of the last solution, which comes
	// after every other, carries the usage of all n requests, and a model
	// that answered.
	emit := func(chunk *provider.Chunk) bool {
		if chunk.Done && chunk.Index == n-1 {
			u := total
			chunk.Usage, chunk.Model, chunk.ResponseID = &u, model, id
			reported = true
		}
		return yield(chunk, nil)
	}
	// next gives the turn to the solutions after cur, which ended.
	next := func() bool {
		for cur++; cur < n; cur++ {
			for _, c := range pending[cur] {
				if !emit(c) {
					return false
				}
			}
			pending[cur] = nil
			if !ended[cur] {
				break
			}
		}
		return true
	}
	for {
		var it item
		var ok bool
		select {
		case it, ok = <-items:
		case <-ctx.Done():
			// What the requests were billed and was not said yet goes
			// with the error: the usage of those that ended, of those cut
			// by it (once they stopped), and any said by a chunk still
			// waiting for its turn: a usage-only one, or a gathered
			// solution's that failed (a Done chunk's went into total).
			cancel()
			wg.Wait()
			u := unsaid
			if !reported {
				u.Add(total)
			}
			for _, cs := range pending {
				for _, c := range cs {
					if c.Usage != nil {
						u.Add(*c.Usage)
					}
				}
			}
			if (u != provider.Usage{}) && !yield(&provider.Chunk{Index: n - 1, Usage: &u, Model: model, ResponseID: id}, nil) {
				return
			}
			yield(nil, ctx.Err())
			return
		}
		if !ok {
			break
		}
		if se := it.stop; se != nil {
			stopped = append(stopped, se.Index)
			if stop == nil || se.Index < stop.Index {
				// Its request is over, and the others go on: it ends
				// the stream after them.
				stop = se
			}
		}
		if se, ok := errors.AsType[*StopError](it.err); ok {
			// Stopped before its request failed (see events).
			stopped = append(stopped, se.Index)
			if stop == nil || se.Index < stop.Index {
				stop = se
			}
		}
		if it.err != nil {
			// Those streaming go on; the error ends the stream after them.
			if failed == nil {
				failed = it.err
				spare()
			}
			ended[it.index] = true
			if it.index == cur && !next() {
				return
			}
			continue
		}
		chunk := it.chunk
		if chunk.Done {
			if chunk.Usage != nil {
				total.Add(*chunk.Usage)
			}
			model, id = cmp.Or(chunk.Model, model), cmp.Or(chunk.ResponseID, id)
			chunk.Usage, chunk.Model, chunk.ResponseID = nil, "", ""
		}
		if chunk.Index != cur {
			pending[chunk.Index] = append(pending[chunk.Index], chunk)
			ended[chunk.Index] = chunk.Done
			continue
		}
		if !emit(chunk) {
			return
		}
		if chunk.Done && !next() {
			return
		}
	}
	// Every request ended: what is left of the solutions after one that
	// never began comes in order.
	for ; cur < n; cur++ {
		for _, c := range pending[cur] {
			if !emit(c) {
				return
			}
		}
	}
	if !reported && (total != provider.Usage{}) {
		// The last solution failed: the usage of those that ended.
		if !yield(&provider.Chunk{Index: n - 1, Usage: &total, Model: model, ResponseID: id}, nil) {
			return
		}
	}
	if stop == nil {
		if failed != nil {
			yield(nil, failed)
		}
		return
	}
	stop.Others = stops.Others(stop.Index, stopped)
	switch inner, ok := errors.AsType[*StopError](failed); {
	case failed == nil:
		failed = stop
	case ok:
		// The failure says a solution stopped before it (see events):
		// it now says them all.
		*inner = *stop
	default:
		// The solutions stopped are no more solutions than when no
		// request fails: the error says them with the failure.
		failed = stops.After(failed, stop)
	}
	yield(nil, failed)
}
