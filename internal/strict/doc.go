// Package strict checks schemas against the structured-output rules of
// OpenAI, Anthropic and Gemini, and runs fake provider APIs that enforce
// them, for tests.
//
// A checker ([OpenAI], [Anthropic] and [AnthropicRequest], [Gemini],
// [GeminiJSON], or [Check] by dialect) returns nil or an [*Error] that
// lists every [Violation]: the [Rule] broken, the JSON pointer of the
// place in the schema, and what is wrong in the provider's words. The
// rules are written from each provider's documentation, listed below with
// where each comes from; where the documentation is silent, a rule comes
// from the provider's own error messages as reported in public issues.
//
// The servers ([NewOpenAI], [NewAnthropic], [NewGemini]) speak the real
// wire formats, a JSON body or an SSE stream as the request asks. They
// take the schema the adapter sent, check it, answer HTTP 400 with the
// provider's error body when it breaks a rule, and otherwise answer with
// the solution an [Answer] makes of the decoded request. [Solution] makes
// such an answer from the schema the provider got: a call to each tool
// asked for, with every meta-property the call's schema offers.
//
// # OpenAI
//
// Strict structured outputs (response_format json_schema with strict:
// true), from platform.openai.com/docs/guides/structured-outputs,
// "Supported schemas":
//   - the root is an object, not anyOf ([RuleRootObject], [RuleRootAnyOf]);
//   - supported keywords only: type, properties, required,
//     additionalProperties, items, enum, const, anyOf, $ref, $defs,
//     definitions, description, title, string pattern and format, number
//     multipleOf, maximum, exclusiveMaximum, minimum, exclusiveMinimum,
//     array minItems and maxItems ([RuleKeyword]; the API says "'x' is not
//     permitted"); the JSON Schema types ([RuleType]); formats date-time,
//     time, date, duration, email, hostname, ipv4, ipv6, uuid
//     ([RuleFormat]);
//   - every object has "additionalProperties": false
//     ([RuleAdditionalProperties]) and lists every property in required
//     ([RuleRequiredAll]), and required names only properties
//     ([RuleRequiredUnknown]);
//   - limits: 5000 object properties, 10 levels of object nesting (counted
//     below the root), 120,000 characters of property names, definition
//     names, enum and const values, 1000 enum values, and 15,000
//     characters for one string enum of more than 250 values
//     ([RulePropertyCount], [RuleDepth], [RuleStringSize],
//     [RuleEnumCount], [RuleEnumSize]).
//
// From the API's error messages: a schema must say what it is ("schema
// must have a 'type' key", [RuleTypeRequired]: type, enum, const, anyOf
// or $ref), an array needs items ("array schema missing items",
// [RuleArrayItems]); and from the official Python SDK
// (openai-python src/openai/lib/_pydantic.py, which inlines such refs):
// a $ref has no sibling keywords ([RuleRefSiblings]). Refs are local and
// resolve ([RuleRef]); recursion is allowed.
//
// # Anthropic
//
// Claude's structured outputs (output_config.format json_schema, and tools
// with strict: true), from platform.claude.com/docs/en/build-with-claude/
// structured-outputs, "JSON Schema limitations":
//   - supported: the basic types, enum of strings, numbers, booleans and
//     null ([RuleEnum]), const, anyOf, allOf but not with $ref
//     ([RuleAllOfRef]), local $ref, $defs and definitions ([RuleRef]),
//     required, additionalProperties false, which every object needs
//     ([RuleAdditionalProperties]), string formats date-time, time, date,
//     duration, email, hostname, uri, ipv4, ipv6, uuid ([RuleFormat]),
//     pattern without backreferences, lookahead, lookbehind or word
//     boundaries ([RulePattern]), minItems of 0 or 1 only ([RuleMinItems]);
//     anything else, such as minimum, maximum, multipleOf, minLength,
//     maxLength or maxItems, is rejected ([RuleKeyword]); so is recursion
//     ([RuleRecursion]);
//   - limits per request, across the output format and the strict tools:
//     20 strict tools ([RuleStrictTools]), 24 optional parameters
//     (properties not in their object's required, [RuleOptionalCount]), 16
//     parameters with union types (anyOf or a list of types,
//     [RuleUnionCount]). The API's messages for these read "Schemas
//     contains too many optional parameters (N) ... (limit: 24)".
//
// The root of an output format, like a tool's input_schema, is an object
// ([RuleRootObject]). The supported formats and the minItems rule agree
// with the official Python SDK's transform (anthropic-sdk-python
// src/anthropic/lib/_parse/_transform.py).
//
// # Gemini
//
// generationConfig.responseSchema is the API's Schema message, "a select
// subset of an OpenAPI 3.0 schema object" (ai.google.dev/api, Schema;
// ai.google.dev/gemini-api/docs/structured-output):
//   - its fields only: type, format, title, description, nullable, enum,
//     items, minItems, maxItems, properties, required, minProperties,
//     maxProperties, minLength, maxLength, pattern, example, anyOf,
//     propertyOrdering, default, minimum, maximum; any other is "Unknown
//     name ... Cannot find field" ([RuleKeyword]), so no $ref, $defs,
//     const, oneOf, allOf or additionalProperties;
//   - type is one name of the Type enum (STRING, NUMBER, INTEGER, BOOLEAN,
//     ARRAY, OBJECT, NULL), not a list ([RuleType]); enum holds strings
//     ([RuleEnum]); NUMBER takes the formats float and double, INTEGER
//     int32 and int64 ([RuleFormat]); counts are non-negative integers
//     ([RuleValue]);
//   - an OBJECT has properties ("should be non-empty for OBJECT type",
//     [RuleObjectProperties]); required and propertyOrdering name its
//     properties ([RuleRequiredUnknown], [RulePropertyOrdering]).
//
// generationConfig.responseJsonSchema (GenerationConfig in
// ai.google.dev/api/generate-content) takes JSON Schema, of which only
// $id, $defs, $ref, $anchor, type, format, title, description, enum (for
// strings and numbers), items, prefixItems, minItems, maxItems, minimum,
// maximum, anyOf, oneOf, properties, additionalProperties, required and
// propertyOrdering are supported ([RuleKeyword], [RuleEnum]); a $ref has
// no siblings but $-keywords ([RuleRefSiblings]); a cyclic reference is
// only allowed in a property that is not required ([RuleRecursion]). It
// excludes responseSchema, and both need responseMimeType
// application/json. Gemini documents no size limits.
package strict
