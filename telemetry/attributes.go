package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// providerName returns the gen_ai.provider.name of an Endpoint's
// Provider: the conventions' name of a provider they know, else the
// adapter's own name (an OpenAI-compatible server's, say).
func providerName(adapter string) string {
	if adapter == "gemini" {
		return "gcp.gemini"
	}
	return adapter
}

// operation returns the gen_ai.operation.name of a request to an
// Endpoint's Provider: the conventions name Gemini's API
// generate_content, and the others' chat.
func operation(adapter string) attribute.KeyValue {
	if adapter == "gemini" {
		return semconv.GenAIOperationNameGenerateContent
	}
	return semconv.GenAIOperationNameChat
}

// endpointAttrs returns the attributes that say where requests go: the
// provider, and the server of its base URL.
func endpointAttrs(e provider.Endpoint) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if name := providerName(e.Provider); name != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(name))
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || u.Hostname() == "" {
		return attrs
	}
	attrs = append(attrs, semconv.ServerAddress(u.Hostname()))
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	if port > 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	return attrs
}

// tokens returns the input and output tokens of u as the conventions
// count them: cached tokens in the input, reasoning in the output, which
// provider.Usage keeps apart. Spans and metrics both count with it.
func tokens(u provider.Usage) (input, output int) {
	return u.Input + u.CacheRead + u.CacheWrite, u.Output + u.Thinking
}

// usageAttrs returns the usage attributes of u, counted by tokens.
func usageAttrs(u provider.Usage) []attribute.KeyValue {
	in, out := tokens(u)
	attrs := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(in),
		semconv.GenAIUsageOutputTokens(out),
	}
	if u.CacheRead > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(u.CacheRead))
	}
	if u.CacheWrite > 0 {
		attrs = append(attrs, semconv.GenAIUsageCacheCreationInputTokens(u.CacheWrite))
	}
	if u.Thinking > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(u.Thinking))
	}
	return attrs
}

// setError marks span as failed with err: the status, an exception
// event and error.type, all with errorText.
func setError(span trace.Span, err error) {
	text := errorText(err)
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(semconv.ExceptionType(typeName(err)), semconv.ExceptionMessage(text)))
	span.SetStatus(codes.Error, text)
	span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
}

// errorText returns the text of err for a span or a log. A schema
// violation says where it is and which keyword failed, not the value:
// the model wrote it, and it may hold what the conversation said.
func errorText(err error) string {
	text := err.Error()
	if v, ok := errors.AsType[*schema.ValidationError](err); ok {
		text = strings.Replace(text, v.Error(), violations(v), 1)
	}
	if d, ok := errors.AsType[*schema.DecodeError](err); ok {
		text = strings.Replace(text, d.Error(), undecoded(d), 1)
	}
	return text
}

// undecoded says where a value that met its schema did not decode into
// its Go type, and into what when encoding/json says it, without the
// value, which encoding/json's text and a type's UnmarshalJSON may quote.
func undecoded(d *schema.DecodeError) string {
	at := d.InstancePath
	if at == "" {
		at = "(root)"
	}
	why := "the value does not decode"
	if te, ok := errors.AsType[*json.UnmarshalTypeError](d.Err); ok && te.Type != nil {
		kind, _, _ := strings.Cut(te.Value, " ") // "number 1e40": the kind, then the value
		why = "cannot decode JSON " + kind + " into " + te.Type.String()
	}
	return "schema: decode at " + at + ": " + why
}

// violations lists where v and its causes failed, and on which keyword,
// once each: "at /amount: type; at (root): required".
func violations(v *schema.ValidationError) string {
	var out []string
	var walk func(v *schema.ValidationError)
	walk = func(v *schema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		at := v.InstancePath
		if at == "" {
			at = "(root)"
		}
		kw := v.KeywordPath[strings.LastIndexByte(v.KeywordPath, '/')+1:]
		if s := "at " + at + ": " + kw; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	walk(v)
	return strings.Join(out, "; ")
}

// typeName names the type of err as an exception event does.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// errorType returns the error.type of err: a low-cardinality name of
// what went wrong. A cancellation or a timeout comes first, as the cause
// of whatever failed with it (a call whose activity was cancelled, say).
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, provider.ErrTimeout):
		return "timeout"
	}
	if ce, ok := errors.AsType[*agent.CallError](err); ok {
		return string(ce.Kind)
	}
	if pe, ok := errors.AsType[*provider.Error](err); ok && pe.Status != 0 {
		return strconv.Itoa(pe.Status)
	}
	for _, e := range []struct {
		err  error
		name string
	}{
		{agent.ErrMaxSteps, "max_steps"},
		{agent.ErrMaxCalls, "max_calls"},
		{agent.ErrTokenBudget, "token_budget"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
