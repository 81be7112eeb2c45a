// Package schema compiles, validates, derives and adapts the JSON Schemas of the Acts
// protocol: the composed schema an LLM request must answer, the tools whose calls it
// contains, and the Go types that stand behind them.
//
// It is pure: no I/O, goroutines or clock. Validation is JSON Schema 2020-12, done by
// [github.com/santhosh-tekuri/jsonschema/v6]; schemas of Go types come from
// [github.com/invopop/jsonschema].
//
// # Registry and refs
//
// A [Registry] is the spec's Schemistry: a flat set of named schemas. A schema refers to
// another by name, {"$ref": "MetaSchema"}, to a part of one, {"$ref":
// "MetaSchema#/$defs/version"}, or inside itself, {"$ref": "#/$defs/x"}. Names are
// resolved when a schema is compiled or adapted, so they may be registered in any order;
// a ref to a name that is not registered is an error wrapping [ErrUnknownRef] that names
// the ref and where it is. Nothing is ever loaded from a file or the network.
//
//	reg := schema.NewRegistry()
//	reg.Register("MetaSchema", metaJSON)     // panics on a bad or duplicate schema
//	s, err := reg.Compile(composedJSON)      // cached by content
//	err = s.Validate(answer)                 // nil, or a *schema.ValidationError
//
// # Nullable
//
// The spec pages write OpenAPI 3.0's "nullable": true (the solution's output is a
// nullable object). JSON Schema has no such keyword, so every schema is translated when
// it is registered, compiled or adapted: {"type":"object","nullable":true} becomes
// {"type":["object","null"]}; null joins an enum or const; a schema with no type but a
// $ref or a composition becomes {"anyOf":[<schema>,{"type":"null"}]}.
//
// # Validation and errors
//
// A [Schema] validates raw JSON ([Schema.Validate]) or a decoded value
// ([Schema.ValidateValue]). "format" is asserted. A failure is a [*ValidationError]
// with the instance path, the keyword path and every cause; its text is meant for the
// LLM, one failure a line ("at /calls/0/amount: expected number, got string"), shows only
// the closest alternatives of an anyOf, and is stable across runs and library versions.
//
// Validation first tries a fast path, which checks the decoded value against a plain
// compiled form of the schema without building errors. Each schema in it answers valid,
// invalid or unsure, and allOf, anyOf, oneOf, not, if and the other applicators combine
// those answers exactly, so an alternative it cannot decide (a keyword such as "format"
// or "unevaluatedProperties", a ref cycle) leaves the answer unsure wherever it could
// change it. Only a certain "valid" is taken; everything else goes to the library, which
// also produces the error.
//
// # Go types
//
// [For] returns the schema of a Go type, inline and deterministic; [Decode] validates
// JSON against it and decodes it.
//
// # Provider dialects
//
// Providers accept subsets of JSON Schema in their structured-output modes. [Adapt]
// rewrites a schema into a [Dialect] ([Full], [OpenAI], [Anthropic], [Gemini],
// [GeminiJSON]); the provider gets the adapted schema, and the answer is validated
// locally against the original with [Registry.CompileFor], so nothing the dialect
// dropped goes unchecked.
package schema
