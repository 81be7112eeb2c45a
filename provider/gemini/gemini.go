package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/apierr"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/provider/internal/stops"
)

// DefaultBaseURL is the Gemini API's root, used when [Config.BaseURL] is
// empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// Defaults of the limits in [Config].
const (
	// DefaultConnectTimeout bounds dialing and the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultFirstByteTimeout bounds the wait for the first byte of the
	// response body. It covers a whole non-streamed answer and the thinking
	// before the first event of a stream, hence its length.
	DefaultFirstByteTimeout = 5 * time.Minute
	// DefaultIdleTimeout bounds the silence between two pieces of a
	// stream.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxAnswerBytes caps the size of one answer.
	DefaultMaxAnswerBytes = 8 << 20
)

// Config configures a [Provider]. The zero value of every field is a
// documented default; a zero Config works when GEMINI_API_KEY or
// GOOGLE_API_KEY is set and every request names its model.
type Config struct {
	// APIKey authenticates the requests (header x-goog-api-key). Empty means
	// the environment variable GEMINI_API_KEY, then GOOGLE_API_KEY; [New]
	// fails with provider.ErrNoKey when all three are empty.
	APIKey string
	// BaseURL is the API's root, for proxies and tests; the API version
	// (v1beta) and the model's path are appended to it. Empty means
	// [DefaultBaseURL]. The SDK's GOOGLE_GEMINI_BASE_URL variable is not
	// consulted.
	BaseURL string
	// Model is the model used when provider.Request.Model is empty, such
	// as "gemini-2.5-flash". Empty means every request must name one;
	// otherwise Generate fails with [ErrNoModel].
	Model string
	// HTTPClient sends the requests; nil means a client with
	// http.DefaultTransport. The Provider uses a copy whose transport is
	// wrapped (to read Retry-After and enforce the timeouts below), so the
	// client passed in is not changed.
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
	// candidates of a stream, or the body of a response that does not
	// stream. Past it Generate ends with a *provider.LimitError. 0 means
	// [DefaultMaxAnswerBytes], negative means no cap.
	MaxAnswerBytes int64
	// ResponseSchema sends provider.Request.Schema as
	// generationConfig.responseSchema, Gemini's OpenAPI subset, for models
	// before Gemini 2.5, which do not take the default responseJsonSchema.
	// The OpenAPI subset has no refs, so a schema of many tools sent in it
	// is about twice as long. See the package documentation.
	ResponseSchema bool
	// SingleCandidate leaves candidateCount out of every request, so that
	// the API answers one candidate, and a Request for several solutions
	// asks again for each. Without it, a model that refuses candidateCount
	// above 1 (Gemini 3 models answer 400 "Multiple candidates is not
	// enabled for this model") is asked again at once without it, and not
	// sent it again by this Provider: SingleCandidate only spares that
	// first refused request.
	SingleCandidate bool
	// JSONSchema asked for responseJsonSchema when it was not the default.
	//
	// Deprecated: responseJsonSchema is the default; JSONSchema overrides
	// ResponseSchema and has no other effect.
	JSONSchema bool
}

// Provider is a provider.Provider for the Gemini API (Google AI Studio
// keys), built on the google.golang.org/genai SDK. It is safe for
// concurrent use.
type Provider struct {
	baseURL  string
	models   *genai.Models
	model    string
	openAPI  bool  // the schema goes in responseSchema
	single   bool  // no candidateCount (Config.SingleCandidate)
	maxBytes int64 // the cap on an answer, 0 for none
	// oneCandidate holds the names of the models that refused a
	// candidateCount above 1, which are sent none after that.
	oneCandidate sync.Map
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider configured by cfg. It does no I/O.
func New(cfg Config) (*Provider, error) {
	key := cfg.APIKey
	for _, env := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if key == "" {
			key = os.Getenv(env)
		}
	}
	if key == "" {
		return nil, fmt.Errorf("gemini: %w: set Config.APIKey, GEMINI_API_KEY or GOOGLE_API_KEY", provider.ErrNoKey)
	}
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	maxBytes := limit.Or(cfg.MaxAnswerBytes, DefaultMaxAnswerBytes)
	hc := limit.Client(wrapClient(cfg.HTTPClient), limit.Config{
		Provider:  name,
		Connect:   limit.Or(cfg.ConnectTimeout, DefaultConnectTimeout),
		FirstByte: limit.Or(cfg.FirstByteTimeout, DefaultFirstByteTimeout),
		Idle:      limit.Or(cfg.IdleTimeout, DefaultIdleTimeout),
		MaxBody:   maxBytes,
	})
	hc.Transport = &sseTransport{base: hc.Transport}
	// The SDK only uses ctx to find Google Cloud credentials, which the
	// Gemini API backend with an API key never does.
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: hc,
		// No RetryOptions: the SDK then sends each request once, and
		// retrying is left to provider.Retry.
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return &Provider{baseURL: baseURL, models: client.Models, model: cfg.Model, openAPI: cfg.ResponseSchema && !cfg.JSONSchema, single: cfg.SingleCandidate, maxBytes: maxBytes}, nil
}

// Generate sends req to the Gemini API: generateContent, or
// streamGenerateContent with server-sent events when req.Stream is set. The
// stream is single-use. It never modifies req. See the package
// documentation for how req and the answer are mapped.
//
// It sends one request, or two when the model refuses the candidateCount
// that req.N asked for: then it asks again for one candidate (the caller
// asks again for the rest, as of a server that answers fewer), and sends
// that model no candidateCount from then on.
//
// Errors: ctx.Err() when ctx ends; a *provider.Error for an error response
// or an error event; a *provider.TimeoutError when a timeout of Config
// fires; a *provider.LimitError past Config.MaxAnswerBytes; an error
// wrapping provider.ErrNoAnswer for a network error before any byte of the
// answer, and one wrapping provider.ErrTruncated for a stream cut after
// (but before every candidate's finishReason STOP: a stream cut after them
// ends well); a *[BlockedError] for a prompt the API blocked; a *[FinishError], after
// the chunks of every candidate, for one that a filter (or another reason
// than its end or a token limit) stopped; when the stream then fails, its
// error wraps that *FinishError too.
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
		yield = apierr.WithModel(yield, c.model)
		if _, ok := p.oneCandidate.Load(c.model); ok {
			c.config.CandidateCount = 0
		}
		var resp *genai.GenerateContentResponse
		for {
			ex := &exchange{}
			ctx := context.WithValue(ctx, exchangeKey{}, ex)
			if req.Stream {
				if p.stream(ctx, c, ex, yield) {
					continue
				}
				return
			}
			resp, err = p.models.GenerateContent(ctx, c.model, c.contents, c.config)
			if err == nil {
				break
			}
			if err = convertError(ctx, err, ex, false); !p.refusedCandidates(c, err) {
				yield(nil, err)
				return
			}
		}
		chunks, stop, err := answer(resp)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, ch := range chunks {
			if !yield(ch, nil) {
				return
			}
		}
		if stop != nil {
			yield(nil, stop)
		}
	}
}

// refusedCandidates reports whether err is the API's refusal of the
// candidateCount above 1 that c asked for, and then takes candidateCount
// out of c and remembers the model. Gemini 3 models answer 400 "Multiple
// candidates is not enabled for this model", older ones "Only one
// candidate can be specified"; the code, INVALID_ARGUMENT, is that of any
// bad request, so the message tells, and any 400 that names candidates
// while c asks for several is taken as one: one candidate is what a model
// that takes several takes too. Only those two refusals are remembered:
// another (a count above the model's maximum, say) says nothing of a
// smaller one.
func (p *Provider) refusedCandidates(c *call, err error) bool {
	if c.config.CandidateCount <= 1 {
		return false
	}
	pe, ok := errors.AsType[*provider.Error](err)
	if !ok || pe.Status != http.StatusBadRequest || pe.Err == nil {
		return false
	}
	msg := strings.ToLower(pe.Err.Error())
	if !strings.Contains(msg, "candidate") {
		return false
	}
	if strings.Contains(msg, "multiple candidates is not enabled") || strings.Contains(msg, "only one candidate") {
		p.oneCandidate.Store(c.model, struct{}{})
	}
	c.config.CandidateCount = 0
	return true
}

// responses is the SDK's stream of c's answer, with the error that ended
// its body, which the SDK is not shown (see sseTransport), as its last
// item.
func (p *Provider) responses(ctx context.Context, c *call, ex *exchange) iter.Seq2[*genai.GenerateContentResponse, error] {
	return func(yield func(*genai.GenerateContentResponse, error) bool) {
		for resp, err := range p.models.GenerateContentStream(ctx, c.model, c.contents, c.config) {
			if !yield(resp, err) {
				return
			}
		}
		if ex.readErr != nil {
			yield(nil, ex.readErr)
		}
	}
}

// stream runs one streamGenerateContent call. Text and thinking go out as
// they arrive; the chunk that finishes a candidate is held back until the
// next one, so that the very last chunk can carry the usage, which Gemini
// completes only in the final event, and the model version. It reports
// whether the API refused c's candidateCount before anything was yielded
// (see refusedCandidates): the call is then to be sent again, without it.
func (p *Provider) stream(ctx context.Context, c *call, ex *exchange, yield func(*provider.Chunk, error) bool) bool {
	var (
		held     *provider.Chunk
		usage    *genai.GenerateContentResponseUsageMetadata
		model    string // the modelVersion the events said
		id       string // the responseId the events said
		block    *BlockedError
		stop     *FinishError // the lowest candidate stopped abnormally
		finished = map[int]bool{}
		reasons  = map[int]string{} // candidate → finish reason
		cut      bool               // whether the stream broke after every candidate ended
		order    []int              // candidates in the order they first appeared
		budget   = limit.NewBudget(name, p.maxBytes)
	)
	flush := func() bool {
		if held == nil {
			return true
		}
		ch := held
		held = nil
		return yield(ch, nil)
	}
	// fail yields what was held back, with the latest usageMetadata when
	// an event had one (the prompt's tokens, the candidates' so far),
	// since a call that failed may be billed, then err, with the
	// candidates stopped before it, which are no more an answer than on
	// a stream that ended well.
	fail := func(err error) {
		if stop != nil {
			err = stops.After(err, stop)
		}
		if usage != nil {
			if held == nil {
				held = &provider.Chunk{}
			}
			held.Usage, held.Model, held.ResponseID = normalize(usage), model, id
		}
		if flush() {
			yield(nil, err)
		}
	}
	// answered reports whether every candidate ended well, with its
	// finishReason STOP.
	answered := func() bool {
		for _, i := range order {
			if reasons[i] != "stop" {
				return false
			}
		}
		return len(order) > 0 && stop == nil
	}
	for resp, err := range p.responses(ctx, c, ex) {
		if err != nil {
			// A failure after a 200 is a stream that broke.
			err = convertError(ctx, err, ex, ex.status >= 200 && ex.status < 300)
			if len(order) == 0 && held == nil && p.refusedCandidates(c, err) {
				return true
			}
			if errors.Is(err, provider.ErrTruncated) && answered() {
				// Broke after every candidate ended, in the event
				// with the final usageMetadata: nothing was lost.
				cut = true
				break
			}
			fail(err)
			return false
		}
		if err := ctx.Err(); err != nil {
			fail(err)
			return false
		}
		if resp == nil {
			continue
		}
		if resp.UsageMetadata != nil {
			usage = resp.UsageMetadata
		}
		if resp.ModelVersion != "" {
			model = resp.ModelVersion
		}
		if resp.ResponseID != "" {
			id = resp.ResponseID
		}
		if b := blocked(resp.PromptFeedback); b != nil {
			block = b
		}
		for _, cand := range resp.Candidates {
			if cand == nil {
				continue
			}
			ch, err := chunk(cand)
			if err != nil {
				fail(err)
				return false
			}
			if _, seen := finished[ch.Index]; !seen {
				order = append(order, ch.Index)
				finished[ch.Index] = false
			}
			if finished[ch.Index] || (!ch.Done && ch.Text == "" && ch.Thinking == "") {
				continue // nothing new, or more after the end
			}
			if err := budget.Spend(ch); err != nil {
				fail(err)
				return false
			}
			if !flush() {
				return false
			}
			if ch.Done {
				finished[ch.Index] = true
				reasons[ch.Index] = ch.FinishReason
				stop = first(stop, stopped(cand))
				held = ch
				continue
			}
			if !yield(ch, nil) {
				return false
			}
		}
	}
	if err := ctx.Err(); err != nil {
		fail(err)
		return false
	}
	if len(order) == 0 {
		if block != nil {
			fail(block)
		} else {
			fail(fmt.Errorf("gemini: %w: no candidate received", provider.ErrTruncated))
		}
		return false
	}
	for _, i := range order {
		if !finished[i] {
			fail(fmt.Errorf("gemini: %w: candidate %d has no finishReason", provider.ErrTruncated, i))
			return false
		}
	}
	if held == nil { // cannot happen: the last candidate to finish is held
		held = &provider.Chunk{Index: order[len(order)-1]}
	}
	held.Usage, held.Model, held.ResponseID = normalize(usage), model, id
	held.UsageLost = cut && usage == nil
	if flush() && stop != nil {
		yield(nil, stop)
	}
	return false
}
