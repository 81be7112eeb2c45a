package openai

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/augceo/agent/provider"
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
	// HTTPClient sends the requests; nil means the SDK's default client
	// (http.DefaultTransport with a 10-minute response-header timeout).
	HTTPClient *http.Client
	// Name is reported in provider.Error.Provider and prefixes error
	// text; empty means [DefaultName]. Set it to tell compatible servers
	// apart ("ollama", "vllm").
	Name string
	// JSONMode is for compatible servers without strict structured
	// outputs: it sends response_format {"type":"json_object"} and puts the
	// full schema into the system message instead of sending
	// {"type":"json_schema", ..., "strict": true}. The answer is validated
	// by the caller either way.
	JSONMode bool
	// LegacyMaxTokens sends Request.MaxTokens as max_tokens instead of
	// max_completion_tokens, for servers that only know the older name
	// (Ollama). OpenAI's reasoning models reject max_tokens.
	LegacyMaxTokens bool
	// ThinkingOff is the reasoning_effort sent for a negative
	// Request.Thinking; empty means [DefaultThinkingOff]. Set it to "none"
	// for models that accept it (GPT-5.1 and later, which reject
	// "minimal"), or to "low" for o-series models.
	ThinkingOff string
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
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{client: openai.NewClient(opts...), cfg: cfg}, nil
}

// Generate sends req to the Chat Completions API and returns its answer as
// a single-use stream of chunks, as provider.Provider describes: one chunk
// per choice, or the deltas of an SSE stream when req.Stream is set, with
// the usage on the last chunk. Visible reasoning that compatible servers
// send (reasoning_content or reasoning) arrives as Chunk.Thinking.
//
// Errors: ctx.Err() when ctx ends; a *provider.Error for an API error
// response or when no response came; an error wrapping
// provider.ErrTruncated, after the text already received, when a stream
// ends before a choice's finish_reason; a *[RefusalError] after the
// chunks when the model refused; [ErrNoModel], [ErrUnknownRole] or a schema
// error before anything is sent. Generate never modifies req.
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
		params, err := p.params(req)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // a consumer that breaks out ends the HTTP request
		if req.Stream {
			p.stream(ctx, params, yield)
		} else {
			p.complete(ctx, params, yield)
		}
	}
}
