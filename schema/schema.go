package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A Schema is a compiled schema. It is immutable and safe for concurrent use; compile
// once and validate many times.
//
// Validation follows JSON Schema 2020-12, with two choices: "format" is asserted (a
// "date-time" must be one), and "nullable" is read as OpenAPI 3.0 defines it.
type Schema struct {
	lib   *jsonschema.Schema
	fast  *fastNode // nil when refs resolve in ways the fast path does not follow (see fast.go)
	named bool      // its refs reach schemas registered by name
	// written is the schema as written, when this one was compiled for
	// OpenAI's strict mode, with null allowed for optional properties
	// (see DropAbsent); with the rules of caseRules when it has cases.
	written *Schema
}

// NamesSchemas reports whether s refers to schemas registered by name
// ({"$ref":"City"}). Whoever gets s without its registry (a provider)
// cannot resolve those: [Registry.Adapt] bundles them into "$defs".
func (s *Schema) NamesSchemas() bool { return s.named }

// Validate reports whether data, one JSON value, conforms to s. It returns nil, an error
// wrapping [ErrInvalidJSON], or a [*ValidationError]. A number written with more than
// 1000 characters, or with an exponent beyond ±1000, is invalid wherever it appears:
// validating it exactly would take minutes.
func (s *Schema) Validate(data json.RawMessage) error {
	v, err := decode(data)
	if err != nil {
		return err
	}
	return s.ValidateValue(v)
}

// ValidateValue is [Schema.Validate] for a value already decoded from JSON: nil, bool,
// float64 or [json.Number], string, []any and map[string]any, as [json.Unmarshal]
// produces into an any.
func (s *Schema) ValidateValue(v any) error {
	if at, n := numberOutOfRange(v); n != "" {
		return rangeError(at, n)
	}
	return s.validateInRange(v)
}

// validateInRange is [Schema.ValidateValue] of v, whose numbers are all
// within maxNumber.
func (s *Schema) validateInRange(v any) error {
	if s.fast != nil && s.fast.accepts(v) {
		return nil
	}
	err := s.lib.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return fromLibrary(ve)
	}
	return err
}

// decode decodes one JSON value, numbers as json.Number so none loses
// precision. Valid JSON is decoded by jsonfast.Decode, which gives what
// encoding/json's Decoder with UseNumber gives (fuzzed against it) at a
// fraction of the cost: every call and every solution is validated.
func decode(data []byte) (any, error) {
	if !jsonfast.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil { // what jsonfast rejects and encoding/json takes: invalid UTF-8
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			if err = dec.Decode(&v); err == nil {
				return v, nil
			}
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	return jsonfast.Decode(data), nil
}
