package schema

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// composed is a solution schema as the Request composes it (spec 002): meta, a nullable
// output and calls whose items are the tools, told apart by "_tool".
const composed = `{
  "type": "object",
  "properties": {
    "meta": {"type": "object", "properties": {"path": {"type": "string"}, "version": {"type": "string"}}},
    "output": {"type": "object", "nullable": true, "properties": {"summary": {"type": "string"}},
               "required": ["summary"], "additionalProperties": false},
    "calls": {"type": "array", "items": {"anyOf": [
      {"type": "object", "properties": {"_tool": {"const": "greetUser"}, "userName": {"type": "string", "minLength": 1}},
       "required": ["_tool", "userName"], "additionalProperties": false},
      {"type": "object", "properties": {"_tool": {"const": "issueRefund"}, "customerId": {"type": "string"},
       "amount": {"type": "number", "exclusiveMinimum": 0}, "currency": {"enum": ["USD", "EUR"]}},
       "required": ["_tool", "customerId", "amount"], "additionalProperties": false}
    ]}}
  },
  "required": ["meta", "calls", "output"]
}`

func TestErrorText(t *testing.T) {
	s, err := Compile(raw(composed))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, tt := range []struct{ name, value string }{
		{"wrong type in a call", `{"meta":{},"output":null,"calls":[{"_tool":"issueRefund","customerId":"c1","amount":"50"}]}`},
		{"several failures", `{"meta":{"version":1},"output":null,"calls":[{"_tool":"issueRefund","amount":0,"currency":"GBP"},{"_tool":"greetUser","userName":""}]}`},
		{"unknown tool", `{"meta":{},"output":null,"calls":[{"_tool":"sendEmail","to":"x"}]}`},
		{"two close alternatives", `{"meta":{},"output":null,"calls":[{"userName":"Ann"}]}`},
		{"output of the wrong shape", `{"meta":{},"calls":[],"output":{"summary":"ok","extra":true}}`},
		{"output of the wrong type", `{"meta":{},"calls":[],"output":"done"}`},
		{"missing everything", `{}`},
		{"not an object", `[1,2]`},
	} {
		err := s.Validate(raw(tt.value))
		if err == nil {
			t.Fatalf("%s: Validate(%s) = nil", tt.name, tt.value)
		}
		if _, ok := errors.AsType[*ValidationError](err); !ok {
			t.Fatalf("%s: %T is not a *ValidationError", tt.name, err)
		}
		fmt.Fprintf(&out, "## %s\n%s\n%s\n\n", tt.name, tt.value, err)
	}
	golden(t, "errors.golden", out.Bytes())
}

func TestValidationErrorFields(t *testing.T) {
	s, err := Compile(raw(composed))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(raw(`{"meta":{},"output":null,"calls":[{"_tool":"issueRefund","customerId":"c1","amount":"50"}]}`))
	got, _ := errors.AsType[*ValidationError](err)
	want := &ValidationError{
		InstancePath: "/calls/0",
		KeywordPath:  "/properties/calls/items/anyOf",
		Message:      "matches none of the 2 alternatives",
		Causes: []*ValidationError{
			{InstancePath: "/calls/0", KeywordPath: "/properties/calls/items/anyOf/0", Message: "alternative 0", Causes: []*ValidationError{
				{InstancePath: "/calls/0", KeywordPath: "/properties/calls/items/anyOf/0/additionalProperties", Message: `properties "amount", "customerId" are not allowed`},
				{InstancePath: "/calls/0", KeywordPath: "/properties/calls/items/anyOf/0/required", Message: `missing required property "userName"`},
				{InstancePath: "/calls/0/_tool", KeywordPath: "/properties/calls/items/anyOf/0/properties/_tool/const", Message: `expected "greetUser", got "issueRefund"`},
			}},
			{InstancePath: "/calls/0", KeywordPath: "/properties/calls/items/anyOf/1", Message: "alternative 1", Causes: []*ValidationError{
				{InstancePath: "/calls/0/amount", KeywordPath: "/properties/calls/items/anyOf/1/properties/amount/type", Message: "expected number, got string"},
			}},
		},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("error tree (-got +want):\n%s", diff)
	}
}

func TestKeywordPathThroughRefs(t *testing.T) {
	r := NewRegistry()
	r.Register("Money", raw(`{"type":"object","properties":{"amount":{"type":"number"}}}`))
	s, err := r.Compile(raw(`{"properties":{"price":{"$ref":"Money"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := errors.AsType[*ValidationError](s.Validate(raw(`{"price":{"amount":"1"}}`)))
	want := &ValidationError{InstancePath: "/price/amount", KeywordPath: "/properties/price/$ref/properties/amount/type",
		Message: "expected number, got string"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
}

func TestInvalidJSON(t *testing.T) {
	s, err := Compile(raw(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`{`, `{"a":1}x`, ``, `{"a":tru}`} {
		if err := s.Validate(raw(v)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("Validate(%q) = %v, want ErrInvalidJSON", v, err)
		}
	}
}
