package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// toolSchema is a tool with five parameters besides _tool, as the Request sends it.
func toolSchema(i int) string {
	return fmt.Sprintf(`{"type":"object","description":"Issues a refund.","properties":{
		"_tool":{"const":"tool%d"},
		"customerId":{"type":"string","minLength":1,"maxLength":40},
		"amount":{"type":"number","minimum":0},
		"currency":{"type":"string","enum":["USD","EUR"]},
		"notify":{"type":["boolean","null"]},
		"lines":{"type":"array","items":{"type":"integer"},"maxItems":10}},
		"required":["_tool","customerId","amount"],"additionalProperties":false}`, i)
}

func toolCall(i int) string {
	return fmt.Sprintf(`{"_tool":"tool%d","customerId":"cust_123","amount":50.25,"currency":"USD","notify":true,"lines":[1,2,3]}`, i)
}

// solutionSchema composes n tools into calls, with a nullable output.
func solutionSchema(n int) string {
	tools := make([]string, n)
	for i := range tools {
		tools[i] = toolSchema(i)
	}
	return `{"type":"object","properties":{"calls":{"type":"array","items":{"anyOf":[` + strings.Join(tools, ",") +
		`]}},"output":{"type":"object","nullable":true,"properties":{"summary":{"type":"string"}},"required":["summary"]}},
		"required":["calls","output"]}`
}

// solution has n calls, to tools 0..tools-1 in turn.
func solution(n, tools int) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = toolCall(i % tools)
	}
	return `{"calls":[` + strings.Join(calls, ",") + `],"output":null}`
}

// BenchmarkValidate measures validation of LLM answers against compiled schemas. The
// "lib" variants skip the fast path (what every invalid value costs, and what schemas
// with keywords the fast path does not know cost).
func BenchmarkValidate(b *testing.B) {
	tool, err := Compile(raw(toolSchema(0)))
	if err != nil {
		b.Fatal(err)
	}
	call := raw(toolCall(0))
	b.Run("tool-params", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := tool.Validate(call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool-params/lib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := libOnly(tool, call); err != nil {
				b.Fatal(err)
			}
		}
	})

	// 10 calls, each validated against its own tool chosen by _tool, against the anyOf
	// of all 10 tools, and as one composed solution.
	var tools []*Schema
	byName := map[string]*Schema{}
	for i := range 10 {
		s, err := Compile(raw(toolSchema(i)))
		if err != nil {
			b.Fatal(err)
		}
		tools = append(tools, s)
		byName[fmt.Sprintf("tool%d", i)] = s
	}
	var anyOf []string
	for i := range 10 {
		anyOf = append(anyOf, toolSchema(i))
	}
	union, err := Compile(raw(`{"anyOf":[` + strings.Join(anyOf, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	composed, err := Compile(raw(solutionSchema(10)))
	if err != nil {
		b.Fatal(err)
	}
	var calls []json.RawMessage
	var names []string
	for i := range 10 {
		calls = append(calls, raw(toolCall(i)))
		names = append(names, fmt.Sprintf("tool%d", i))
	}
	sol := raw(solution(10, 10))
	b.Run("solution-10-calls/per-tool", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, c := range calls {
				if err := byName[names[i]].Validate(c); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("solution-10-calls/anyOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range calls {
				if err := union.Validate(c); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("solution-10-calls/composed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := composed.Validate(sol); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("solution-10-calls/per-tool/lib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for i, c := range calls {
				if err := libOnly(byName[names[i]], c); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("solution-10-calls/anyOf/lib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, c := range calls {
				if err := libOnly(union, c); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("solution-10-calls/composed/lib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := libOnly(composed, sol); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := raw(`{"_tool":"tool3","customerId":"cust_123","amount":"50"}`)
	b.Run("invalid-call/anyOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if union.Validate(bad) == nil {
				b.Fatal("accepted")
			}
		}
	})
	_ = tools
}

// libOnly is Validate without the fast path.
func libOnly(s *Schema, data json.RawMessage) error {
	v, err := decode(data)
	if err != nil {
		return err
	}
	if err := s.lib.Validate(v); err != nil {
		return err
	}
	return nil
}

func BenchmarkCompile(b *testing.B) {
	src := raw(solutionSchema(10))
	b.Run("solution-10-tools", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (*Registry)(nil).Compile(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	r := NewRegistry()
	b.Run("solution-10-tools/cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Compile(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAdapt(b *testing.B) {
	src := raw(solutionSchema(10))
	for _, d := range []Dialect{Full, OpenAI, Anthropic, Gemini} {
		b.Run(d.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Adapt(src, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
