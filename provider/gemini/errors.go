package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/provider/internal/stops"
)

// Sentinel errors.
var (
	// ErrNoModel reports a request without a model when [Config.Model] is
	// empty too.
	ErrNoModel = errors.New("gemini: no model")
	// ErrNoCandidates reports an answer without any candidate. A prompt
	// that the API blocked is a [*BlockedError], which wraps it.
	ErrNoCandidates = errors.New("gemini: no candidates")
)

// BlockedError reports a prompt that the API refused to answer:
// promptFeedback.blockReason, and no candidate. It wraps
// [ErrNoCandidates].
type BlockedError struct {
	Reason     string   // blockReason as sent: "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "OTHER", ...
	Categories []string // the harm categories of the prompt's safety ratings that blocked it
}

// Error returns, for example, "gemini: no candidates: prompt blocked
// (SAFETY: HARM_CATEGORY_HARASSMENT)".
func (e *BlockedError) Error() string {
	return fmt.Sprintf("%v: prompt blocked (%s)", ErrNoCandidates, why(e.Reason, e.Categories))
}

// Unwrap returns [ErrNoCandidates].
func (e *BlockedError) Unwrap() error { return ErrNoCandidates }

// FinishError reports a candidate that the API stopped for a reason other
// than its natural end (STOP) or a token limit (MAX_TOKENS,
// CONTINUATION): a safety or recitation filter (SAFETY, RECITATION,
// BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY, ...), an unsupported
// language (LANGUAGE), a malformed function call, or OTHER. Its text is
// cut, or empty. Generate yields it after the chunks of every candidate,
// the Done chunk of this one included, so the text that arrived is not
// lost; when several candidates stopped so, it names the lowest index, and
// Others the rest.
type FinishError struct {
	Index      int      // the solution
	Reason     string   // finishReason as sent: "SAFETY", "RECITATION", ...
	Categories []string // the harm categories of the candidate's safety ratings that blocked it
	// Others are the other candidates the API stopped so, in increasing
	// order; none when Index alone was. Their reasons may differ.
	Others []int
}

var _ provider.SolutionError = (*FinishError)(nil)

// Solutions returns Index and Others: every candidate the API stopped (see
// [provider.SolutionError]).
func (e *FinishError) Solutions() []int { return stops.Solutions(e.Index, e.Others) }

// Error returns, for example, "gemini: solution 0 stopped (SAFETY:
// HARM_CATEGORY_DANGEROUS_CONTENT)".
func (e *FinishError) Error() string {
	return fmt.Sprintf("gemini: solution %d stopped (%s)", e.Index, why(e.Reason, e.Categories))
}

// why is a reason followed by the categories that caused it.
func why(reason string, categories []string) string {
	if len(categories) == 0 {
		return reason
	}
	return reason + ": " + strings.Join(categories, ", ")
}

// blockedBy returns the categories of the ratings marked blocked, in the
// order sent.
func blockedBy(ratings []*genai.SafetyRating) []string {
	var cats []string
	for _, r := range ratings {
		if r != nil && r.Blocked {
			cats = append(cats, string(r.Category))
		}
	}
	return cats
}

// name is provider.Error.Provider for this adapter.
const name = "gemini"

// exchange records the HTTP response of one Generate call, which the SDK
// does not expose on its errors: the status and the headers (Retry-After,
// Date). It travels to the transport on the request's context.
type exchange struct {
	status int
	header http.Header
	// readErr is the error that ended the body of a stream, which the
	// SDK is not shown (see sseTransport).
	readErr error
}

type exchangeKey struct{}

// transport records each response's status and headers in the exchange found
// on the request's context.
type transport struct {
	base http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if ex, ok := r.Context().Value(exchangeKey{}).(*exchange); ok && resp != nil {
		ex.status, ex.header = resp.StatusCode, resp.Header
	}
	return resp, err
}

// wrapClient returns a copy of c (nil means a new client) whose transport
// records the responses.
func wrapClient(c *http.Client) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	}
	base := cc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = &transport{base: base}
	return &cc
}

// convertError turns an error from the SDK into the error Generate yields:
// ctx.Err() once ctx is done, a *provider.Error for an error response of
// the API (an HTTP status or an error event inside a stream), and, when
// midStream, an error wrapping provider.ErrTruncated for a stream that
// broke after it had started.
func convertError(ctx context.Context, err error, ex *exchange, midStream bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if own := limit.Own(err); own != nil {
		return own
	}
	var ae genai.APIError
	if pae, ok := errors.AsType[*genai.APIError](err); ok && pae != nil {
		ae = *pae
	} else if ae, ok = errors.AsType[genai.APIError](err); !ok {
		if midStream {
			return fmt.Errorf("gemini: %w: %w", provider.ErrTruncated, err)
		}
		return fmt.Errorf("gemini: %w", err)
	}
	pe := &provider.Error{Provider: name, Status: ae.Code}
	if pe.Status == 0 && ex.status >= 300 {
		pe.Status = ex.status
	}
	if isCode(ae.Status) {
		pe.Code = ae.Status
	}
	// The SDK keeps a body that is not the API's JSON (a proxy's text)
	// as the message, trailing newline included.
	msg := strings.TrimSpace(ae.Message)
	if msg == "" {
		msg = ae.Status
	}
	if msg == "" {
		msg = http.StatusText(pe.Status)
	}
	pe.Err = errors.New(msg)
	if ex.status >= 300 { // the headers belong to this error, not to a 200 stream
		pe.RetryAfter = retryAfter(ex.header)
	}
	if pe.RetryAfter == 0 {
		pe.RetryAfter = retryDelay(ae.Details)
	}
	return pe
}

// isCode reports whether s looks like a google.rpc.Code name such as
// RESOURCE_EXHAUSTED (and not an HTTP status line, which the SDK puts in
// APIError.Status when the body is not JSON).
func isCode(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return true
}

func retryAfter(h http.Header) time.Duration { return provider.RetryAfter(h) }

// retryDelay reads the retryDelay of a google.rpc.RetryInfo detail, a
// protobuf Duration in JSON form such as "37s" or "1.5s".
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
}
