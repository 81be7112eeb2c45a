package openai

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/apierr"
	"github.com/augceo/agent/provider/internal/limit"
)

// Defaults of [Config].
const (
	// DefaultName is the name reported in provider.Error.Provider.
	DefaultName = "openai"
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1/"
	// DefaultThinkingOff is the reasoning_effort sent for a negative
	// thinking budget: the lowest setting GPT-5 accepts.
	DefaultThinkingOff = "minimal"
	// DefaultSchemaName names the response schema when Request.SchemaName
	// is empty.
	DefaultSchemaName = "solution"
	// DefaultConnectTimeout bounds dialing and the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultFirstByteTimeout bounds the wait for the first byte of the
	// response body. It covers a whole non-streamed answer and the silence
	// of a reasoning model before its first token, hence its length.
	DefaultFirstByteTimeout = 5 * time.Minute
	// DefaultIdleTimeout bounds the silence between two pieces of a
	// stream.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxAnswerBytes caps the size of one answer.
	DefaultMaxAnswerBytes = 8 << 20
)

// Config configures a [Provider]. The zero value talks to OpenAI with the
// key in OPENAI_API_KEY and needs a model in every Request.
type Config struct {
	// APIKey is sent as a bearer token. Empty means the OPENAI_API_KEY
	// environment variable. A key is required unless BaseURL (or
	// OPENAI_BASE_URL) names another server: local servers such as
	// Ollama need none, and none is sent when both are empty. Note that
	// OPENAI_API_KEY is sent to whatever server BaseURL names.
	APIKey string
	// BaseURL is the API's root, including its version path
	// ("http://localhost:11434/v1" for Ollama, "http://host:8000/v1" for
	// vLLM). Empty means the OPENAI_BASE_URL environment variable, else
	// [DefaultBaseURL].
	BaseURL string
	// Model is used when Request.Model is empty. A model is required one
	// way or the other: Generate fails with [ErrNoModel] otherwise.
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
	// byte of the response body (the headers and the first chunk of a
	// stream, the whole answer otherwise); 0 means
	// [DefaultFirstByteTimeout], negative means none.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds how long a read of the response body waits for
	// the server once its first byte arrived: the server's silence, not
	// the time the consumer takes between two chunks. 0 means
	// [DefaultIdleTimeout], negative means none.
	IdleTimeout time.Duration
	// MaxAnswerBytes caps one answer: the text and reasoning of all the
	// choices of a stream, or the body of a response that does not
	// stream. Past it Generate ends with a *provider.LimitError. 0 means
	// [DefaultMaxAnswerBytes], negative means no cap.
	MaxAnswerBytes int64
	// Name is reported in provider.Error.Provider and prefixes error
	// text; empty means [DefaultName]. Set it to tell compatible servers
	// apart ("ollama", "vllm").
	Name string
	// JSONMode is for compatible servers without strict structured
	// outputs: it sends response_format {"type":"json_object"} and puts the
	// full schema into the system message instead of sending
	// {"type":"json_schema", ..., "strict": true}. The answer is validated
	// by the caller either way. LM Studio refuses json_object.
	JSONMode bool
	// LegacyMaxTokens sends Request.MaxTokens as max_tokens instead of
	// max_completion_tokens, for servers that only know the older name
	// (Ollama, llama-server). OpenAI's reasoning models reject max_tokens.
	LegacyMaxTokens bool
	// ThinkingOff is the reasoning_effort sent for a negative
	// Request.Thinking; empty means [DefaultThinkingOff]. Set it to "none"
	// for models that accept it (GPT-5.1 and later, which reject
	// "minimal"), or to "low" for o-series models.
	ThinkingOff string
	// SingleChoice leaves n out of every request, so that the server
	// answers one choice, and a Request for several solutions asks again
	// for each: for servers that refuse n above 1 (llama-server answers
	// 500 "Only one completion choice is allowed").
	SingleChoice bool
	// NoPromptCacheKey leaves out prompt_cache_key (Request.CacheKey), for
	// compatible servers that reject fields they do not know; OpenAI,
	// Ollama and vLLM take it or ignore it.
	NoPromptCacheKey bool
}

// Provider is an OpenAI Chat Completions client that implements
// provider.Provider. It is safe for concurrent use.
type Provider struct {
	client openai.Client
	cfg    Config // with defaults applied
	max    int64  // the cap on an answer, 0 for none
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider for cfg, reading OPENAI_API_KEY and
// OPENAI_BASE_URL for the fields left empty. It fails with an error
// wrapping provider.ErrNoKey when no key is found and no BaseURL is set,
// and when BaseURL is not an http or https URL. The SDK also applies its
// other environment variables (OPENAI_ORG_ID, OPENAI_PROJECT_ID,
// OPENAI_CUSTOM_HEADERS). It never retries by itself: wrap the Provider
// in provider.Retry.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if cfg.BaseURL == "" {
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("%s: %w: set Config.APIKey or OPENAI_API_KEY", cfg.Name, provider.ErrNoKey)
		}
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", cfg.Name, cfg.BaseURL)
	}
	if cfg.ThinkingOff == "" {
		cfg.ThinkingOff = DefaultThinkingOff
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // retrying is provider.Retry's job
	}
	maxBytes := limit.Or(cfg.MaxAnswerBytes, DefaultMaxAnswerBytes)
	opts = append(opts, option.WithHTTPClient(limit.Client(cfg.HTTPClient, limit.Config{
		Provider:  cfg.Name,
		Connect:   limit.Or(cfg.ConnectTimeout, DefaultConnectTimeout),
		FirstByte: limit.Or(cfg.FirstByteTimeout, DefaultFirstByteTimeout),
		Idle:      limit.Or(cfg.IdleTimeout, DefaultIdleTimeout),
		MaxBody:   maxBytes,
	})))
	return &Provider{client: openai.NewClient(opts...), cfg: cfg, max: maxBytes}, nil
}

// Generate sends req to the Chat Completions API and returns its answer as
// a single-use stream of chunks, as provider.Provider describes: one chunk
// per choice, or the deltas of an SSE stream when req.Stream is set, with
// the usage on the last chunk. Visible reasoning that compatible servers
// send (reasoning_content or reasoning) arrives as Chunk.Thinking.
//
// Errors: ctx.Err() when ctx ends; a *provider.Error for an API error
// response or when no response came (wrapping provider.ErrNoAnswer for a
// network error before any byte of the answer); a *provider.TimeoutError
// when a timeout of Config fires; a *provider.LimitError past
// Config.MaxAnswerBytes; an error wrapping
// provider.ErrTruncated, after the text already received, when a stream
// ends before a choice's finish_reason (one that breaks after every
// choice's finish_reason "stop" ends well, with Chunk.UsageLost when the
// usage was not said, as on any answer whose server said none); a
// *[RefusalError] after the
// chunks when the model refused, a *[FilterError] when a content filter
// stopped a choice (when the stream then fails, its error wraps them
// too); [ErrNoModel], [ErrUnknownRole] or a schema error before anything
// is sent. Generate never modifies req.
func (p *Provider) Generate(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if req == nil {
			yield(nil, fmt.Errorf("%s: nil request", p.cfg.Name))
			return
		}
		b, err := p.request(req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield = apierr.WithModel(yield, b.Model)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // a consumer that breaks out ends the HTTP request
		body, err := b.marshal()
		if err != nil {
			// As when the SDK encoded the request: an error with no status.
			yield(nil, p.apiError(ctx, nil, err))
			return
		}
		if req.Stream {
			p.stream(ctx, body, yield)
		} else {
			p.complete(ctx, body, yield)
		}
	}
}
