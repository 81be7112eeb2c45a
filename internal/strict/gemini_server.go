package strict

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// NewGemini starts a strict fake of the Gemini API's generateContent and
// streamGenerateContent (POST <URL>/v1beta/models/<model>:<method>, SSE
// with alt=sse). generationConfig.responseSchema is checked with [Gemini],
// responseJsonSchema with [GeminiJSON]; setting both, or either without
// responseMimeType application/json, is an error as with the API.
func NewGemini(t testing.TB, answer Answer) *Server {
	return newServer(t, "gemini", answer, serveGemini)
}

func serveGemini(s *Server, w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	stream := strings.HasSuffix(path, ":streamGenerateContent")
	if !strings.HasPrefix(path, "/v1beta/models/") || !stream && !strings.HasSuffix(path, ":generateContent") {
		s.t.Errorf("strict gemini server: path %s", path)
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	if stream && r.URL.Query().Get("alt") != "sse" {
		s.t.Errorf("strict gemini server: stream without alt=sse: %s", r.URL.RawQuery)
	}
	type content struct {
		Role  string `json:"role"`
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	var in struct {
		Contents          []content `json:"contents"`
		SystemInstruction *content  `json:"systemInstruction"`
		GenerationConfig  struct {
			CandidateCount     int             `json:"candidateCount"`
			ResponseMimeType   string          `json:"responseMimeType"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	gc := in.GenerationConfig
	req := &Request{Provider: "gemini", Stream: stream, N: max(gc.CandidateCount, 1), Body: body}
	text := func(c content) string {
		var b strings.Builder
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	if in.SystemInstruction != nil {
		req.Messages = append(req.Messages, Message{Role: "system", Text: text(*in.SystemInstruction)})
	}
	for _, c := range in.Contents {
		req.Messages = append(req.Messages, Message{Role: c.Role, Text: text(c)})
	}
	var err error
	field := "response_schema"
	switch {
	case gc.ResponseSchema != nil && gc.ResponseJSONSchema != nil:
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "response_schema and response_json_schema cannot both be set.")
		return
	case gc.ResponseSchema != nil:
		req.Field, req.Schema, req.Strict = "responseSchema", gc.ResponseSchema, true
		err = Gemini(gc.ResponseSchema)
	case gc.ResponseJSONSchema != nil:
		req.Field, req.Schema, req.Strict = "responseJsonSchema", gc.ResponseJSONSchema, true
		err, field = GeminiJSON(gc.ResponseJSONSchema), "response_json_schema"
	}
	if req.Schema != nil && gc.ResponseMimeType != "application/json" {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("%s is set, which needs response_mime_type application/json, not %q.", field, gc.ResponseMimeType))
		return
	}
	if !s.admit(req, err) {
		v := firstViolation(err)
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("* GenerateContentRequest.generation_config.%s%s: %s\n", field, geminiPath(v.Pointer), v.Detail))
		return
	}
	texts, err := s.solutions(req)
	if err != nil {
		s.t.Error(err)
		geminiError(w, http.StatusInternalServerError, "INTERNAL", "An internal error has occurred.")
		return
	}
	const usage = `{"promptTokenCount":20,"candidatesTokenCount":10,"totalTokenCount":30}`
	candidate := func(i int, text, finish string) string {
		f := ""
		if finish != "" {
			f = `,"finishReason":"` + finish + `"`
		}
		return fmt.Sprintf(`{"content":{"parts":[{"text":%s}],"role":"model"}%s,"index":%d}`, js(text), f, i)
	}
	if !stream {
		cands := make([]string, len(texts))
		for i, t := range texts {
			cands[i] = candidate(i, t, "STOP")
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		fmt.Fprintf(w, `{"candidates":[%s],"usageMetadata":%s,"modelVersion":"gemini-strict","responseId":"strict"}`, strings.Join(cands, ","), usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, t := range texts {
		ps := Pieces(t, 16)
		for j, p := range ps {
			finish, u := "", `{"promptTokenCount":20,"totalTokenCount":20}`
			if j == len(ps)-1 {
				finish = "STOP"
				if i == len(texts)-1 {
					u = usage
				}
			}
			fmt.Fprintf(w, "data: {\"candidates\":[%s],\"usageMetadata\":%s,\"modelVersion\":\"gemini-strict\",\"responseId\":\"strict\"}\r\n\r\n", candidate(i, p, finish), u)
			flush(w)
		}
	}
}

// geminiError writes the API's error body.
func geminiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%s,"status":%s}}`, status, js(msg), js(code))
}

// geminiPath renders a JSON pointer as the API's error messages write a
// field path: .properties["output"].anyOf[0].items.
func geminiPath(ptr string) string {
	toks := pointerTokens(ptr)
	var b strings.Builder
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		b.WriteString("." + t)
		if (t == "properties" || t == "$defs") && i+1 < len(toks) {
			i++
			b.WriteString("[" + js(toks[i]) + "]")
		} else if (t == "anyOf" || t == "prefixItems" || t == "enum") && i+1 < len(toks) {
			i++
			b.WriteString("[" + toks[i] + "]")
		}
	}
	return b.String()
}
