package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A Schema is a compiled schema. It is immutable and safe for concurrent use; compile
// once and validate many times.
//
// Validation follows JSON Schema 2020-12, with two choices: "format" is asserted (a
// "date-time" must be one), and "nullable" is read as OpenAPI 3.0 defines it.
type Schema struct {
	lib  *jsonschema.Schema
	fast *fastNode // nil when the schema uses a keyword the fast path does not know
}

// Validate reports whether data, one JSON value, conforms to s. It returns nil, an error
// wrapping [ErrInvalidJSON], or a [*ValidationError].
func (s *Schema) Validate(data json.RawMessage) error {
	if s.fast != nil && s.fast.accepts(data) {
		return nil
	}
	v, err := decode(data)
	if err != nil {
		return err
	}
	return s.ValidateValue(v)
}

// AcceptsObject reports whether data is a JSON object that certainly
// conforms to s, and calls visit with the key (unescaped: a key with an
// escape is not accepted) and the raw value of each member, in order, as
// it checks them: one pass where a caller that wants some members would
// make two. false says nothing: data may be invalid, or s beyond what
// the check knows, and members may have been visited; call Validate to
// tell. key and value share data's bytes.
func (s *Schema) AcceptsObject(data []byte, visit func(key, value []byte)) bool {
	return s.fast != nil && s.fast.acceptsObject(data, visit)
}

// ValidateValue is [Schema.Validate] for a value already decoded from JSON: nil, bool,
// float64 or [json.Number], string, []any and map[string]any, as [json.Unmarshal]
// produces into an any.
func (s *Schema) ValidateValue(v any) error {
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

// decode decodes one JSON value, numbers as json.Number so none loses precision.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: invalid character after top-level value", ErrInvalidJSON)
	}
	return v, nil
}
