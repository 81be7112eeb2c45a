package strict

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// openaiUsage is the usage every OpenAI answer reports.
const openaiUsage = `{"prompt_tokens":20,"completion_tokens":10,"total_tokens":30,"prompt_tokens_details":{"cached_tokens":0}}`

// schemaName is what OpenAI allows as the name of a response format.
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NewOpenAI starts a strict fake of OpenAI's Chat Completions API
// (POST <URL>/chat/completions, a JSON body or an SSE stream as the
// request asks). A response_format of type json_schema with strict: true
// is checked with [OpenAI].
func NewOpenAI(t testing.TB, answer Answer) *Server {
	return newServer(t, "openai", answer, serveOpenAI)
}

func serveOpenAI(s *Server, w http.ResponseWriter, r *http.Request, body []byte) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.t.Errorf("strict openai server: path %s", r.URL.Path)
		openaiError(w, http.StatusNotFound, "Unknown request URL", "")
		return
	}
	var in struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict bool            `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Stream bool `json:"stream"`
		N      int  `json:"n"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		openaiError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "")
		return
	}
	req := &Request{Provider: "openai", Stream: in.Stream, N: max(in.N, 1), Body: body}
	for _, m := range in.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Text: contentText(m.Content)})
	}
	var err error
	name := ""
	if rf := in.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		req.Field, req.Schema, req.Strict = "response_format", rf.JSONSchema.Schema, rf.JSONSchema.Strict
		name = rf.JSONSchema.Name
		if !schemaName.MatchString(name) {
			openaiError(w, http.StatusBadRequest, fmt.Sprintf("Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' and is at most 64 characters, got %q.", name), "response_format.json_schema.name")
			return
		}
		if req.Strict {
			err = OpenAI(req.Schema)
		}
	}
	if !s.admit(req, err) {
		v := firstViolation(err)
		openaiError(w, http.StatusBadRequest, fmt.Sprintf("Invalid schema for response_format '%s': In context=(%s), %s.", name, openaiContext(v.Pointer), v.Detail), "response_format")
		return
	}
	texts, err := s.solutions(req)
	if err != nil {
		s.t.Error(err)
		openaiError(w, http.StatusInternalServerError, "The server had an error while processing your request.", "")
		return
	}
	if !in.Stream {
		choices := make([]string, len(texts))
		for i, text := range texts {
			choices[i] = fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%s,"refusal":null},"logprobs":null,"finish_reason":"stop"}`, i, js(text))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-strict","object":"chat.completion","created":1761480000,"model":"gpt-strict","choices":[%s],"usage":%s}`, strings.Join(choices, ","), openaiUsage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(choices string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-strict\",\"object\":\"chat.completion.chunk\",\"created\":1761480000,\"model\":\"gpt-strict\",\"choices\":[%s]}\n\n", choices)
		flush(w)
	}
	for i, text := range texts {
		chunk(fmt.Sprintf(`{"index":%d,"delta":{"role":"assistant","content":""},"finish_reason":null}`, i))
		for _, p := range Pieces(text, 16) {
			chunk(fmt.Sprintf(`{"index":%d,"delta":{"content":%s},"finish_reason":null}`, i, js(p)))
		}
		chunk(fmt.Sprintf(`{"index":%d,"delta":{},"finish_reason":"stop"}`, i))
	}
	fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-strict\",\"object\":\"chat.completion.chunk\",\"created\":1761480000,\"model\":\"gpt-strict\",\"choices\":[],\"usage\":%s}\n\n", openaiUsage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush(w)
}

// openaiError writes OpenAI's error body.
func openaiError(w http.ResponseWriter, status int, msg, param string) {
	p := "null"
	if param != "" {
		p = js(param)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","param":%s,"code":null}}`, js(msg), p)
}

// openaiContext renders a JSON pointer as OpenAI's error messages write a
// place in a schema: ('properties', 'calls', 'items').
func openaiContext(ptr string) string {
	toks := pointerTokens(ptr)
	for i, t := range toks {
		toks[i] = "'" + t + "'"
	}
	if len(toks) == 1 {
		return toks[0] + ","
	}
	return strings.Join(toks, ", ")
}

// contentText returns the text of a message's content: a string, or the
// text parts of a list.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
