package strict_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/schema"
)

// adapter is a real provider adapter pointed at a strict server.
type adapter struct {
	name    string
	dialect schema.Dialect
	start   func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server)
}

var adapters = []adapter{
	{"openai", schema.OpenAI, func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewOpenAI(t, a)
		p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"anthropic", schema.Anthropic, func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewAnthropic(t, a)
		p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"anthropic tool", schema.Anthropic, func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewAnthropic(t, a)
		p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL, ToolOutput: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"gemini", schema.GeminiJSON, func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewGemini(t, a)
		p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test"})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
	{"gemini responseSchema", schema.Gemini, func(t testing.TB, a strict.Answer) (provider.Provider, *strict.Server) {
		srv := strict.NewGemini(t, a)
		p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test", ResponseSchema: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, srv
	}},
}

// solutionOf answers with a solution made by strict.Solution: a call to
// each tool the schema offers.
func solutionOf(req *strict.Request, _ int) (string, error) {
	tools, err := strict.Tools(req.Schema)
	if err != nil {
		return "", err
	}
	var calls []strict.Call
	for _, tool := range tools {
		calls = append(calls, strict.Call{Tool: tool})
	}
	out, err := strict.Solution(req.Schema, nil, calls...)
	return string(out), err
}

const composed = `{"type":"object","properties":{
	"calls":{"type":"array","items":{"anyOf":[
		{"type":"object","properties":{"_reasoningForCall":{"type":"string"},"_tool":{"const":"put"},"v":{"anyOf":[{"type":"integer"},{"type":"string","pattern":"^†[A-Za-z0-9_-]+"}]},
			"_outputPath":{"type":"string","pattern":"^†"},"_outputMethod":{"enum":["set","merge","assign","push","concat"]},"_instance":{"enum":["a","b"]}},"required":["_tool","v"]},
		{"type":"object","properties":{"_reasoningForCall":{"type":"string"},"_tool":{"const":"guess"},"q":{"type":"string"},"_output":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},
			"_scopes":{"type":"array","items":{"enum":["state","input"]}},"_outputPath":{"type":"string","pattern":"^†"},"_outputMethod":{"enum":["set","merge","assign","push","concat"]}},"required":["_tool"]}]}},
	"output":{"type":["object","null"],"properties":{"x":{"type":"string"}},"required":["x"]}},
	"required":["calls","output"],"additionalProperties":false}`

func TestServersAnswerThroughTheAdapters(t *testing.T) {
	for _, a := range adapters {
		for _, stream := range []bool{false, true} {
			name := a.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				p, srv := a.start(t, solutionOf)
				res, err := provider.Collect(p.Generate(context.Background(), &provider.Request{
					Messages: []provider.Message{{Role: provider.RoleSystem, Text: "Be brief."}, {Role: provider.RoleUser, Text: "Go."}},
					Schema:   json.RawMessage(composed), SchemaName: "solution", Stream: stream,
				}))
				if err != nil {
					t.Fatal(err)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Schema == nil || !strings.Contains(reqs[0].Text(), "Be brief.") || reqs[0].Stream != stream {
					t.Fatalf("requests %+v", reqs)
				}
				want, _ := schema.Adapt(json.RawMessage(composed), a.dialect)
				if got := compact(t, reqs[0].Schema); got != compact(t, want) {
					t.Errorf("the server got the schema\n%s\nwant the adapted one\n%s", got, want)
				}
				// The solution uses every meta-property and meets the
				// composed schema, as the caller validates it.
				sol := res.Texts[0]
				for _, meta := range []string{"_reasoningForCall", `"_tool":"put"`, `"_tool":"guess"`, "_outputPath", "_outputMethod", `"_instance":"a"`, `"_scopes":["state"]`, `"_output":{"n":1}`} {
					if !strings.Contains(sol, meta) {
						t.Errorf("the solution lacks %s: %s", meta, sol)
					}
				}
				reg := schema.NewRegistry()
				s, err := reg.CompileFor(json.RawMessage(composed), a.dialect)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(json.RawMessage(sol)); err != nil {
					t.Errorf("the solution breaks the composed schema: %v\n%s", err, sol)
				}
			})
		}
	}
}

func compact(t *testing.T, s json.RawMessage) string {
	t.Helper()
	var b strings.Builder
	var v any
	if err := json.Unmarshal(s, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	b.Write(out)
	return b.String()
}

// TestAdaptersOverLimits sends schemas whose adaptation breaks only a
// limit of the provider's strict mode, or that Adapt fixes: posted as
// they are, the server refuses them; through each adapter they go with
// strict mode off (OpenAI's strict false, Anthropic's tool that is not
// strict), or fixed, and the answer arrives.
func TestAdaptersOverLimits(t *testing.T) {
	for _, tt := range []struct {
		adapter string
		schema  string
		path    string // of the direct post
		body    string // the direct post, %s the schema adapted
		want    string // in the direct post's error
	}{
		{"openai", deepSchema(strict.OpenAIMaxDepth + 1), "/v1/chat/completions",
			`{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"solution","strict":true,"schema":%s}}}`,
			`Invalid schema for response_format 'solution': In context=(` + strings.Repeat(`'properties', 'a', `, strict.OpenAIMaxDepth) + `'properties', 'a'), objects nest 11 levels deep, more than 10.`},
		{"anthropic", optionalSchema(strict.AnthropicMaxOptional + 1), "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[],"output_config":{"format":{"type":"json_schema","schema":%s}}}`,
			`schemas contain too many optional parameters (25): the limit is 24`},
		{"gemini", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n","v"]}`, "/v1beta/models/m:generateContent",
			`{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"n":{"type":"NUMBER"}},"required":["n","v"]}}}`,
			`GenerateContentRequest.generation_config.response_schema.required: required property \"v\" is not defined`},
	} {
		t.Run(tt.adapter, func(t *testing.T) {
			var a adapter
			for _, x := range adapters {
				if x.name == tt.adapter {
					a = x
				}
			}
			p, srv := a.start(t, func(*strict.Request, int) (string, error) { return `{"n":1}`, nil })
			adapted, err := schema.Adapt(json.RawMessage(tt.schema), a.dialect)
			if err != nil {
				t.Fatal(err)
			}
			body := strings.Replace(tt.body, "%s", string(adapted), 1)
			resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), tt.want) {
				t.Fatalf("direct post: got %d %s, want a 400 saying %s", resp.StatusCode, got, tt.want)
			}

			res, err := provider.Collect(p.Generate(context.Background(), &provider.Request{
				Messages: []provider.Message{{Role: provider.RoleUser, Text: "Go."}}, Schema: json.RawMessage(tt.schema), SchemaName: "solution",
			}))
			if err != nil || res.Texts[0] != `{"n":1}` {
				t.Fatalf("through the adapter: got %v, %v", res, err)
			}
			if n := len(srv.Rejected()); n != 1 { // the direct post
				t.Errorf("rejected %v", srv.Rejected())
			}
			reqs := srv.Requests()
			if last := reqs[len(reqs)-1]; last.Strict != (tt.adapter == "gemini") {
				t.Errorf("the adapter's request was sent with strict %v, in %s", last.Strict, last.Field)
			}
		})
	}
}

// TestServerErrorBodies checks the error bodies of the servers against the
// providers' shapes, posting straight to them.
func TestServerErrorBodies(t *testing.T) {
	never := func(*strict.Request, int) (string, error) { return "", errors.New("not reached") }
	for _, tt := range []struct {
		name, path, body, want string
	}{
		{"openai", "/v1/chat/completions",
			`{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"solution","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}}`,
			`{"error":{"message":"Invalid schema for response_format 'solution': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'a'.","type":"invalid_request_error","param":"response_format","code":null}}`},
		{"openai root", "/v1/chat/completions",
			`{"model":"m","messages":[],"response_format":{"type":"json_schema","json_schema":{"name":"solution","strict":true,"schema":{"type":"object","properties":{}}}}}`,
			`{"error":{"message":"Invalid schema for response_format 'solution': In context=(), 'additionalProperties' is required to be supplied and to be false.","type":"invalid_request_error","param":"response_format","code":null}}`},
		{"anthropic", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[],"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"additionalProperties":false}}}}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"output_config.format.schema: \"minimum\" is not supported (at /properties/n/minimum)"},"request_id":"req_strict"}`},
		{"anthropic strict tool", "/v1/messages",
			`{"model":"m","max_tokens":10,"messages":[],"tools":[{"name":"t","strict":true,"input_schema":{"type":"object","properties":{}}}]}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.input_schema: 'additionalProperties' is required to be supplied and to be false (at the root)"},"request_id":"req_strict"}`},
		{"gemini", "/v1beta/models/m:generateContent",
			`{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"output":{"type":"OBJECT"}}}}}`,
			`{"error":{"code":400,"message":"* GenerateContentRequest.generation_config.response_schema.properties[\"output\"].properties: should be non-empty for OBJECT type\n","status":"INVALID_ARGUMENT"}}`},
		{"gemini both", "/v1beta/models/m:generateContent",
			`{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"STRING"},"responseJsonSchema":{"type":"string"}}}`,
			`{"error":{"code":400,"message":"response_schema and response_json_schema cannot both be set.","status":"INVALID_ARGUMENT"}}`},
		{"gemini mime type", "/v1beta/models/m:generateContent",
			`{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"string"}}}`,
			`{"error":{"code":400,"message":"response_json_schema is set, which needs response_mime_type application/json, not \"\".","status":"INVALID_ARGUMENT"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var srv *strict.Server
			switch {
			case strings.HasPrefix(tt.name, "openai"):
				srv = strict.NewOpenAI(t, never)
			case strings.HasPrefix(tt.name, "anthropic"):
				srv = strict.NewAnthropic(t, never)
			default:
				srv = strict.NewGemini(t, never)
			}
			resp, err := http.Post(srv.URL+tt.path, "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || string(body) != tt.want {
				t.Errorf("got %d\n%s\nwant 400\n%s", resp.StatusCode, body, tt.want)
			}
		})
	}
}

func TestServerTolerates(t *testing.T) {
	srv := strict.NewGemini(t, func(*strict.Request, int) (string, error) { return `{"n":1}`, nil })
	srv.Tolerate(strict.RuleRequiredUnknown)
	resp, err := http.Post(srv.URL+"/v1beta/models/m:generateContent", "application/json", strings.NewReader(
		`{"contents":[{"role":"user","parts":[{"text":"Go."}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"n":{"type":"NUMBER"}},"required":["n","v"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `{\"n\":1}`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	if tol := srv.Tolerated(); len(tol) != 1 || !strings.Contains(tol[0].Error(), `required-unknown at /required`) {
		t.Errorf("tolerated %v", tol)
	}
}

func TestAnthropicServerStrictToolsLimit(t *testing.T) {
	for _, n := range []int{20, 21} {
		srv := strict.NewAnthropic(t, func(*strict.Request, int) (string, error) { return `{}`, nil })
		var tools []string
		for i := range n {
			tools = append(tools, `{"name":"t`+itoa(i)+`","strict":true,"input_schema":{"type":"object","properties":{},"additionalProperties":false}}`)
		}
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"go"}],"tools":[` + strings.Join(tools, ",") + `]}`
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[int]int{20: http.StatusOK, 21: http.StatusBadRequest}[n]; resp.StatusCode != want {
			t.Errorf("%d strict tools: status %d, want %d: %s", n, resp.StatusCode, want, msg)
		}
		if n == 21 && !strings.Contains(string(msg), "21 strict tools, more than 20") {
			t.Errorf("%d strict tools: %s", n, msg)
		}
	}
}
