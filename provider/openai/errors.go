package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/augceo/agent/internal/runes"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/provider/internal/stops"
)

// Sentinel errors.
var (
	// ErrNoModel reports a request without a model when Config.Model is
	// empty too.
	ErrNoModel = errors.New("openai: no model")
	// ErrUnknownRole reports a message whose role the Chat Completions API does
	// not have.
	ErrUnknownRole = errors.New("openai: unknown role")
)

// RefusalError reports that the model refused to answer: the API's
// message.refusal field (or the refusal deltas of a stream) instead of
// content. Generate yields it after the chunks of every solution, so the
// text of the other solutions is not lost; when several solutions were
// refused or filtered, the error names the lowest index, and Others the
// rest.
type RefusalError struct {
	Index   int    // the solution that was refused
	Message string // the model's explanation
	// Others are the other solutions refused or filtered, in increasing
	// order; none when Index alone was.
	Others []int
}

// Error returns "openai: solution N refused: " and the model's message.
func (e *RefusalError) Error() string {
	return fmt.Sprintf("openai: solution %d refused: %s", e.Index, e.Message)
}

// Solutions returns Index and Others: every solution that was refused or
// filtered (see [provider.SolutionError]).
func (e *RefusalError) Solutions() []int { return stops.Solutions(e.Index, e.Others) }

// FilterError reports a solution that a content filter stopped:
// finish_reason "content_filter", its text cut or empty. OpenAI sends it
// rarely; Azure OpenAI sends it whenever its filter blocks a completion,
// with content_filter_results saying which categories. Asked again, the
// same conversation is filtered again. Generate yields it after the chunks
// of every solution, so the text that arrived is not lost; when several
// solutions were filtered or refused, the error names the lowest index,
// and Others the rest.
type FilterError struct {
	Index int // the solution that was filtered
	// Categories are the keys of the choice's content_filter_results
	// marked filtered ("violence", "protected_material_text", ...), in
	// order; none when the server sent none.
	Categories []string
	// Others are the other solutions filtered or refused, in increasing
	// order; none when Index alone was.
	Others []int
}

// Error returns, for example, "openai: solution 0 stopped by the content
// filter (violence)".
func (e *FilterError) Error() string {
	s := fmt.Sprintf("openai: solution %d stopped by the content filter", e.Index)
	if len(e.Categories) > 0 {
		s += " (" + strings.Join(e.Categories, ", ") + ")"
	}
	return s
}

// Solutions returns Index and Others: every solution that was filtered or
// refused (see [provider.SolutionError]).
func (e *FilterError) Solutions() []int { return stops.Solutions(e.Index, e.Others) }

var (
	_ provider.SolutionError = (*RefusalError)(nil)
	_ provider.SolutionError = (*FilterError)(nil)
)

// finishFiltered is the finish_reason of a choice that a content filter
// stopped.
const finishFiltered = "content_filter"

// filtered returns the categories that content_filter_results marks
// filtered, sorted; nil for none, and for JSON that is not such an
// object. Azure's results are an object per category:
// {"violence":{"filtered":true,"severity":"medium"}, ...}.
func filtered(results []byte) []string {
	if !bytes.Contains(results, []byte("true")) {
		return nil // the usual case, parsed for nothing
	}
	var byCategory map[string]struct {
		Filtered bool `json:"filtered"`
	}
	if json.Unmarshal(results, &byCategory) != nil {
		return nil
	}
	var cats []string
	for _, name := range slices.Sorted(maps.Keys(byCategory)) {
		if byCategory[name].Filtered {
			cats = append(cats, name)
		}
	}
	return cats
}

// stopError returns whichever of the first refused choice and the first
// filtered one has the lower index (the refusal on a tie), with the other
// choices refused or filtered, stopped, as its Others; nil when there is
// neither.
func stopError(refusal *RefusalError, filter *FilterError, stopped []int) error {
	switch {
	case refusal != nil && (filter == nil || refusal.Index <= filter.Index):
		refusal.Others = stops.Others(refusal.Index, stopped)
		return refusal
	case filter != nil:
		filter.Others = stops.Others(filter.Index, stopped)
		return filter
	}
	return nil
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// apiError turns an error from the SDK into the error Generate yields:
// ctx.Err() when the call was cancelled, otherwise a *provider.Error with
// the HTTP status, the API's code or type, Retry-After and its message.
func (p *Provider) apiError(ctx context.Context, res *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if own := limit.Own(err); own != nil {
		return own
	}
	pe := &provider.Error{Provider: p.cfg.Name}
	var kind string // the error's type: which rate limit a 429 hit
	if ae, ok := errors.AsType[*openai.Error](err); ok {
		kind = ae.Type
		pe.Status = ae.StatusCode
		// The SDK reads a numeric code (llama-server's and OpenRouter's
		// repeat of the status) as text; it is no code, as stringCode says.
		pe.Code = firstNonEmpty(stringCode(json.RawMessage(ae.JSON.Code.Raw())), ae.Type)
		if ae.Message != "" {
			pe.Err = errors.New(withUpstream(ae.Message, json.RawMessage(ae.JSON.ExtraFields["metadata"].Raw())))
		}
		if res == nil {
			res = ae.Response
		}
	}
	if res != nil && res.StatusCode >= 400 {
		pe.Status = res.StatusCode
		if pe.Err == nil && res.Body != nil {
			// The SDK leaves the body of an error response readable.
			body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			msg, code := errorBody(body)
			pe.Code = firstNonEmpty(pe.Code, code)
			if msg != "" {
				pe.Err = errors.New(msg)
			}
		}
		if pe.Err == nil {
			pe.Err = errors.New("empty error body")
		}
		pe.RetryAfter = retryAfter(res.Header, pe.Status, kind, pe.Err.Error())
		refusedSchema(pe)
		return pe
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		// An error event inside a 200 stream: {"error":{...}}.
		return p.inBandError(se.Event.Data, se.Message)
	}
	if pe.Status != 0 && pe.Err != nil {
		return pe
	}
	// No response: a transport error (connection refused, reset, TLS...).
	pe.Status = 0
	pe.Err = err
	return pe
}

// ollamaSchema is the message of Ollama's 500 for a schema that
// llama.cpp's grammar converter refuses.
const ollamaSchema = "invalid JSON schema in format"

// refusedSchema marks Ollama's answer to a schema it cannot use. It comes
// as a 500, which would be retried, and fail again, and it names nothing:
// the code says what it is, and the message what to look for.
func refusedSchema(pe *provider.Error) {
	if pe.Status != http.StatusInternalServerError || pe.Err == nil || !strings.Contains(pe.Err.Error(), ollamaSchema) {
		return
	}
	pe.Code = provider.CodeInvalidSchema
	pe.Err = fmt.Errorf("%w (the server could not turn the schema into a grammar; llama.cpp's converter takes a pattern only written ^…$)", pe.Err)
}

// inBandError is the error of a 200 response that carries one in its
// body ({"error":{...}}): an error event of a stream, or the body of a
// response that does not stream, which OpenRouter sends when the model's
// provider failed after the request was accepted. fallback is the message
// when the body has none.
func (p *Provider) inBandError(body []byte, fallback string) *provider.Error {
	msg, code := errorBody(body)
	pe := &provider.Error{
		Provider: p.cfg.Name,
		Status:   streamStatus(body, code),
		Code:     code,
		Err:      errors.New(firstNonEmpty(msg, fallback)),
	}
	if pe.Status == http.StatusTooManyRequests {
		// No headers come with it: the message alone may say when.
		pe.RetryAfter = tryAgainIn(pe.Err.Error())
	}
	return pe
}

// errorBody reads the message and code of an error response. It knows
// OpenAI's {"error":{"message","type","code"}}, the {"error":"text"} and
// top-level {"message","type","code"} that some compatible servers send,
// FastAPI's {"detail":...}, and otherwise returns the text itself.
func errorBody(body []byte) (msg, code string) {
	body = bytes.TrimSpace(body)
	var outer struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		return runes.Truncate(string(body), 500), ""
	}
	var inner struct {
		Message  string          `json:"message"`
		Type     string          `json:"type"`
		Code     json.RawMessage `json:"code"`
		Metadata json.RawMessage `json:"metadata"`
	}
	var text string
	switch {
	case json.Unmarshal(outer.Error, &inner) == nil && (inner.Message != "" || inner.Type != ""):
		return withUpstream(inner.Message, inner.Metadata), firstNonEmpty(stringCode(inner.Code), inner.Type)
	case json.Unmarshal(outer.Error, &text) == nil && text != "":
		return text, ""
	case outer.Message != "":
		return outer.Message, firstNonEmpty(stringCode(outer.Code), outer.Type)
	case json.Unmarshal(outer.Detail, &text) == nil && text != "":
		return text, ""
	case len(outer.Detail) > 0:
		return string(outer.Detail), ""
	}
	return runes.Truncate(string(body), 500), ""
}

// withUpstream adds to msg the error of the model's provider that
// OpenRouter puts in the error's metadata.raw (its message then says only
// "Provider returned error"): the message of that error when it is one
// errorBody reads, else its text.
func withUpstream(msg string, metadata json.RawMessage) string {
	var m struct {
		Raw json.RawMessage `json:"raw"`
	}
	if msg == "" || json.Unmarshal(metadata, &m) != nil || len(m.Raw) == 0 {
		return msg
	}
	raw := []byte(m.Raw)
	var s string
	if json.Unmarshal(m.Raw, &s) == nil {
		raw = []byte(s)
	}
	if up, _ := errorBody(raw); up != "" && up != "null" {
		return msg + ": " + up
	}
	return msg
}

// streamStatuses are the HTTP statuses of the error types and codes an
// error event inside a 200 stream may carry, so that [provider.Retry]
// can tell a server's hiccup, before anything was yielded, from a request
// it will refuse again.
var streamStatuses = map[string]int{
	"server_error":             http.StatusInternalServerError,
	"api_error":                http.StatusInternalServerError,
	"internal_error":           http.StatusInternalServerError,
	"InternalServerError":      http.StatusInternalServerError, // vLLM
	"rate_limit_exceeded":      http.StatusTooManyRequests,
	"rate_limit_error":         http.StatusTooManyRequests,
	"tokens":                   http.StatusTooManyRequests,
	"requests":                 http.StatusTooManyRequests,
	"service_unavailable":      http.StatusServiceUnavailable,
	"ServiceUnavailableError":  http.StatusServiceUnavailable,
	"overloaded_error":         529, // Anthropic's, through a proxy
	"timeout":                  http.StatusGatewayTimeout,
	"timeout_error":            http.StatusGatewayTimeout,
	"invalid_request_error":    http.StatusBadRequest,
	"context_length_exceeded":  http.StatusBadRequest,
	"BadRequestError":          http.StatusBadRequest,
	"insufficient_quota":       http.StatusTooManyRequests,
	"content_policy_violation": http.StatusBadRequest,
}

// streamStatus returns the HTTP status of an error inside a 200 response
// (see inBandError): the status that some compatible servers write as its
// code (vLLM and OpenRouter a number, LiteLLM a string of one), else the
// status of its code or type, else 0.
func streamStatus(data []byte, code string) int {
	var outer struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &outer)
	status := string(outer.Error.Code)
	if s, err := strconv.Unquote(status); err == nil {
		status = s
	}
	if s, err := strconv.Atoi(status); err == nil && s >= 400 && s <= 599 {
		return s
	}
	return streamStatuses[code]
}

// stringCode returns a JSON string code; numeric codes (vLLM repeats the
// HTTP status there) say nothing the status does not.
func stringCode(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// retryAfter is the wait the server asks for before the request is sent
// again: retry-after-ms or Retry-After; else, for a 429, the wait its
// message gives; else the reset of the rate limit used up (see
// rateLimitReset). kind is the error's type, which for a 429 of OpenAI
// names the limit: "tokens" or "requests"; msg is its message.
func retryAfter(h http.Header, status int, kind, msg string) time.Duration {
	if d := provider.RetryAfter(h); d > 0 {
		return d
	}
	if status != http.StatusTooManyRequests {
		return rateLimitReset(h)
	}
	// The message's figure is for this request: the reset headers say
	// when a limit is whole again, which may be later than needed.
	if d := tryAgainIn(msg); d > 0 {
		return d
	}
	if d := rateLimitReset(h); d > 0 {
		return d
	}
	// Every limit still has some left: this request needs more than
	// remains. A request needs one request, so unless the type says
	// requests (a per-minute limit is enforced over shorter spans too),
	// what ran short is tokens, whole again at their reset.
	if kind != "requests" {
		kind = "tokens"
	}
	return resetDuration(h.Get("X-Ratelimit-Reset-" + kind))
}

// tryAgainIn reads the wait in the message of a 429 of OpenAI (and of
// servers that copy it, such as Groq): "… Limit 30000, Used 27000,
// Requested 8000. Please try again in 10s. …", a Go duration ("174ms",
// "1.574s", "2m12.19s"); 0 when the message has none.
func tryAgainIn(msg string) time.Duration {
	const phrase = "try again in "
	i := strings.Index(msg, phrase)
	if i < 0 {
		return 0
	}
	v, _, _ := strings.Cut(msg[i+len(phrase):], " ")
	d, err := time.ParseDuration(strings.TrimRight(v, ".,;"))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// rateLimitReset reads OpenAI's rate limit headers: for each of requests
// and tokens, x-ratelimit-remaining-* and x-ratelimit-reset-*, the time
// until that limit is whole again ("120ms", "1.5s", "6m0s"; Azure OpenAI
// writes seconds as a bare number, "6"). It returns the longest reset of
// the limits with nothing remaining, 0 when none is used up or the
// headers are absent. A 429 may come with these alone, and a retry sooner
// than the reset fails again.
func rateLimitReset(h http.Header) time.Duration {
	var wait time.Duration
	for _, limit := range []string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("X-Ratelimit-Remaining-"+limit)) != "0" {
			continue
		}
		if d := resetDuration(h.Get("X-Ratelimit-Reset-" + limit)); d > wait {
			wait = d
		}
	}
	return wait
}

// resetDuration parses an x-ratelimit-reset-* value: a Go duration such
// as "6m0s", or a number of seconds; 0 for anything else.
func resetDuration(v string) time.Duration {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return provider.ParseRetryAfter(v, time.Time{})
	}
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
