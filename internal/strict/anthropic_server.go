package strict

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// NewAnthropic starts a strict fake of Anthropic's Messages API (POST
// <URL>/v1/messages, a JSON body or an SSE stream as the request asks). The
// schema of output_config.format and those of tools with strict: true are
// checked together with [AnthropicRequest]; a tool that is not strict only
// needs an object input_schema. A request that forces a tool is answered
// with a tool_use block whose input is the solution.
func NewAnthropic(t testing.TB, answer Answer) *Server {
	s := newServer(t, "anthropic", answer, serveAnthropic)
	s.cache = anthropicCache{}
	return s
}

func serveAnthropic(s *Server, w http.ResponseWriter, r *http.Request, body []byte) {
	if r.URL.Path != "/v1/messages" {
		s.t.Errorf("strict anthropic server: path %s", r.URL.Path)
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not found")
		return
	}
	var in struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		OutputConfig *struct {
			Format *struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
			Strict      bool            `json:"strict"`
		} `json:"tools"`
		ToolChoice *struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON.")
		return
	}
	req := &Request{Provider: "anthropic", Stream: in.Stream, N: 1, Body: body}
	blocks, err := anthropicBlocks(body)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if n := len(breakpoints(blocks)); n > AnthropicMaxBreakpoints {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", AnthropicMaxBreakpoints, n))
		return
	}
	s.mu.Lock()
	read := s.cache.read(blocks, s.now) // what the cache holds as the request arrives
	s.mu.Unlock()
	if len(in.System) > 0 {
		req.Messages = append(req.Messages, Message{Role: "system", Text: contentText(in.System)})
	}
	for _, m := range in.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Text: contentText(m.Content)})
	}
	// The strict schemas of the request: the output format's first, then
	// the strict tools'.
	var strict []json.RawMessage
	var where []string
	if oc := in.OutputConfig; oc != nil && oc.Format != nil {
		if oc.Format.Type != "json_schema" {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("output_config.format.type: Input should be 'json_schema', not %q", oc.Format.Type))
			return
		}
		req.Field, req.Schema, req.Strict = "output_config.format", oc.Format.Schema, true
		strict, where = append(strict, oc.Format.Schema), append(where, "output_config.format.schema")
	}
	tool := ""
	strictTools := 0
	for i, t := range in.Tools {
		if t.Strict {
			strictTools++
			strict, where = append(strict, t.InputSchema), append(where, fmt.Sprintf("tools.%d.custom.input_schema", i))
		} else if v, _ := parse(t.InputSchema); !isObjectTypeSchema(v) {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i))
			return
		}
		if in.ToolChoice != nil && (in.ToolChoice.Name == t.Name || in.ToolChoice.Type != "tool" && tool == "") {
			tool = t.Name
			if req.Schema == nil {
				req.Field, req.Schema, req.Strict = "tools/"+t.Name, t.InputSchema, t.Strict
			}
		}
	}
	if len(strict) > 0 {
		err = AnthropicRequest(strict...)
	}
	if strictTools > AnthropicMaxStrictTools {
		more := &Error{Provider: "anthropic", Violations: []Violation{{Rule: RuleStrictTools, Detail: fmt.Sprintf("%d strict tools, more than %d", strictTools, AnthropicMaxStrictTools)}}}
		if e, ok := err.(*Error); ok {
			more.Violations = append(e.Violations, more.Violations...)
		}
		err = more
	}
	if !s.admit(req, err) {
		v := firstViolation(err)
		// A violation of one schema names it, as the API's messages do; a
		// limit of the whole request does not.
		msg := v.Detail
		toks := pointerTokens(v.Pointer)
		switch {
		case len(strict) == 1:
			msg = fmt.Sprintf("%s: %s (at %s)", where[0], v.Detail, pointerOrRoot(v.Pointer))
		case len(toks) > 0:
			var i int
			fmt.Sscan(toks[0], &i)
			if i < len(where) {
				msg = fmt.Sprintf("%s: %s (at %s)", where[i], v.Detail, pointerOrRoot("/"+strings.Join(toks[1:], "/")))
			}
		}
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	texts, err := s.solutions(req)
	if err != nil {
		s.t.Error(err)
		anthropicError(w, http.StatusInternalServerError, "api_error", "Internal server error")
		return
	}
	text := texts[0]
	stop := "end_turn"
	if tool != "" {
		stop = "tool_use"
	}
	s.mu.Lock()
	req.Cache = s.cache.write(blocks, read, s.now)
	s.mu.Unlock()
	usage := fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d},"output_tokens":%%d,"service_tier":"standard"}`,
		req.Cache.Input, req.Cache.Write, req.Cache.Read, req.Cache.Write-req.Cache.WriteHour, req.Cache.WriteHour)
	if !in.Stream {
		block := fmt.Sprintf(`{"type":"text","text":%s}`, js(text))
		if tool != "" {
			block = fmt.Sprintf(`{"type":"tool_use","id":"toolu_strict","name":%s,"input":%s}`, js(tool), text)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_strict","type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":%s,"stop_sequence":null,"usage":`+usage+`}`,
			js(in.Model), block, js(stop), 10)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ, data string, args ...any) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, fmt.Sprintf(data, args...))
		flush(w)
	}
	event("message_start", `{"type":"message_start","message":{"id":"msg_strict","type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`, js(in.Model), 1)
	if tool != "" {
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_strict","name":%s,"input":{}}}`, js(tool))
	} else {
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	}
	event("ping", `{"type": "ping"}`)
	for _, p := range Pieces(text, 16) {
		if tool != "" {
			event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, js(p))
		} else {
			event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, js(p))
		}
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":10}}`, js(stop))
	event("message_stop", `{"type":"message_stop"}`)
}

// isObjectTypeSchema reports whether v is a schema of type object.
func isObjectTypeSchema(v any) bool {
	o, ok := v.(*object)
	if !ok {
		return false
	}
	t, _ := o.get("type")
	return t == "object"
}

func pointerOrRoot(ptr string) string {
	if ptr == "" || ptr == "/" {
		return "the root"
	}
	return ptr
}

// anthropicError writes the Messages API's error body.
func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_strict")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s},"request_id":"req_strict"}`, js(typ), js(msg))
}
