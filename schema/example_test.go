package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/augceo/agent/schema"
)

// A tool's parameters validated as the LLM wrote them; the error text goes back to the
// model so it can correct the call.
func Example() {
	reg := schema.NewRegistry()
	reg.Register("Money", json.RawMessage(`{"type":"object",
		"properties":{"amount":{"type":"number","minimum":0},"currency":{"enum":["USD","EUR"]}},
		"required":["amount","currency"]}`))

	tool, err := reg.Compile(json.RawMessage(`{"type":"object",
		"properties":{"_tool":{"const":"issueRefund"},"customerId":{"type":"string"},"refund":{"$ref":"Money"}},
		"required":["_tool","customerId","refund"],"additionalProperties":false}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(tool.Validate(json.RawMessage(`{"_tool":"issueRefund","customerId":"cust_123","refund":{"amount":50,"currency":"USD"}}`)))
	fmt.Println(tool.Validate(json.RawMessage(`{"_tool":"issueRefund","refund":{"amount":"50","currency":"GBP"}}`)))
	// Output:
	// <nil>
	// at (root): missing required property "customerId"
	// at /refund/amount: expected number, got string
	// at /refund/currency: expected one of "USD", "EUR", got "GBP"
}

// A Go type as the single source of truth: its schema is sent to the model, and the
// answer is validated and decoded in one step.
func ExampleDecode() {
	type Refund struct {
		CustomerID string  `json:"customerId" jsonschema:"description=Who gets the money"`
		Amount     float64 `json:"amount" jsonschema:"minimum=0"`
		Reason     string  `json:"reason,omitempty"`
	}
	fmt.Println(string(schema.For[Refund]()))

	r, err := schema.Decode[Refund](json.RawMessage(`{"customerId":"cust_123","amount":12.5}`))
	fmt.Println(r, err)
	_, err = schema.Decode[Refund](json.RawMessage(`{"customerId":"cust_123","amount":-1}`))
	fmt.Println(err)
	// Output:
	// {"type":"object","properties":{"customerId":{"type":"string","description":"Who gets the money"},"amount":{"type":"number","minimum":0},"reason":{"type":"string"}},"required":["customerId","amount"],"additionalProperties":false}
	// {cust_123 12.5 } <nil>
	// at /amount: expected a number >= 0, got -1
}

// The same schema, rewritten for each provider's structured-output mode.
func ExampleAdapt() {
	s := json.RawMessage(`{"type":"object","properties":{
		"answer":{"type":"string","minLength":1},
		"output":{"type":"object","nullable":true,"properties":{"done":{"type":"boolean"}}}},
		"required":["answer"]}`)
	for _, d := range []schema.Dialect{schema.Full, schema.OpenAI, schema.Anthropic, schema.Gemini} {
		out, err := schema.Adapt(s, d)
		fmt.Printf("%s: %s %v\n", d, out, err)
	}
	// Output:
	// full: {"type":"object","properties":{"answer":{"type":"string","minLength":1},"output":{"type":["object","null"],"properties":{"done":{"type":"boolean"}}}},"required":["answer"]} <nil>
	// openai: {"type":"object","properties":{"answer":{"type":"string","description":"(minLength: 1)"},"output":{"type":["object","null"],"properties":{"done":{"type":["boolean","null"]}},"additionalProperties":false,"required":["done"]}},"required":["answer","output"],"additionalProperties":false} <nil>
	// anthropic: {"type":"object","properties":{"answer":{"type":"string","description":"(minLength: 1)"},"output":{"type":["object","null"],"properties":{"done":{"type":"boolean"}},"additionalProperties":false}},"required":["answer"],"additionalProperties":false} <nil>
	// gemini: {"type":"OBJECT","properties":{"answer":{"type":"STRING","minLength":1},"output":{"type":"OBJECT","properties":{"done":{"type":"BOOLEAN"}},"nullable":true,"propertyOrdering":["done"]}},"required":["answer"],"propertyOrdering":["answer","output"]} <nil>
}
