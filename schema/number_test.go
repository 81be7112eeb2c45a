package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/schema"
)

// A number with a huge exponent is refused at once, with its place, by
// every schema: the library would crash on it (minimum, multipleOf) or
// take minutes computing its exact value.
func TestNumberOutOfRange(t *testing.T) {
	long := "1" + strings.Repeat("0", 1000)
	for _, tt := range []struct{ schema, data, at string }{
		{`{"maximum":3}`, `1e999999999`, ""},
		{`{"multipleOf":0.5}`, `1e-999999999`, ""},
		{`{"minimum":0}`, `1e99999999`, ""},
		{`{"type":"object","properties":{"n":{"type":"number","maximum":3}}}`, `{"n":2.5E+5000}`, "/n"},
		{`{"type":"array","items":{"multipleOf":3}}`, `[3,6,` + long + `]`, "/2"},
		{`{}`, `{"a":[1e1001]}`, "/a/0"},
		// Of two, the one under the first key, every time.
		{`{}`, `{"m":{"z":1e1001,"b":1e1001,"k":[1e1001]}}`, "/m/b"},
	} {
		s, err := schema.Compile(json.RawMessage(tt.schema))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = s.Validate(json.RawMessage(tt.data))
		for range 20 { // a map's order changes from one walk to the next
			if again := s.Validate(json.RawMessage(tt.data)); fmt.Sprint(again) != fmt.Sprint(err) {
				t.Errorf("%s: %v, then %v", tt.data, err, again)
				break
			}
		}
		if ve, ok := errors.AsType[*schema.ValidationError](err); !ok || ve.InstancePath != tt.at || !strings.Contains(ve.Message, "out of range") {
			t.Errorf("%s against %s: %v, want out of range at %q", tt.data[:min(len(tt.data), 30)], tt.schema, err, tt.at)
		} else if len(ve.Error()) > 200 {
			t.Errorf("the error is %d bytes long: %.100s...", len(ve.Error()), ve.Error())
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %v", tt.schema, d)
		}
	}
	// A schema that holds such a number does not compile.
	for _, s := range []string{`{"multipleOf":1e-999999999}`, `{"properties":{"a":{"maximum":1e5000}}}`} {
		if _, err := schema.Compile(json.RawMessage(s)); !errors.Is(err, schema.ErrInvalidSchema) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Compile(%s) = %v, want ErrInvalidSchema: out of range", s, err)
		}
	}
	// Within the bounds, numbers are validated as before.
	s, _ := schema.Compile(json.RawMessage(`{"maximum":3}`))
	for data, valid := range map[string]bool{`1e1000`: false, `3e-1000`: true, `-1E+999`: true, strings.Repeat("0", 0) + "2": true} {
		if err := s.Validate(json.RawMessage(data)); (err == nil) != valid {
			t.Errorf("%s against maximum 3: %v, want valid %v", data, err, valid)
		}
	}
}

// A count beyond what the library holds as an int64 means what it says:
// a maximum nothing reaches, a minimum nothing meets. The library wrapped
// them around (a maxLength of 2^63 refused every string).
func TestHugeCounts(t *testing.T) {
	const (
		str, arr, obj = `"abc"`, `[1,2]`, `{"a":1}`
		big63         = "9223372036854775808"
		big64         = "18446744073709551616"
	)
	for _, tt := range []struct {
		schema, data string
		valid        bool
	}{
		{`{"maxLength":` + big63 + `}`, str, true},
		{`{"maxLength":` + big64 + `}`, str, true},
		{`{"maxLength":1e19}`, str, true},
		{`{"maxLength":9223372036854775807}`, str, true},
		{`{"minLength":` + big64 + `}`, str, false},
		{`{"maxItems":` + big63 + `}`, arr, true},
		{`{"minItems":` + big64 + `}`, arr, false},
		{`{"maxProperties":` + big64 + `}`, obj, true},
		{`{"minProperties":` + big64 + `}`, obj, false},
		{`{"contains":{},"maxContains":` + big64 + `}`, arr, true},
		{`{"contains":{},"minContains":` + big64 + `}`, arr, false},
		{`{"type":"object","properties":{"s":{"maxLength":1e30}}}`, `{"s":"x"}`, true},
		{`{"maxLength":3}`, `"abcd"`, false},
	} {
		s, err := schema.Compile(json.RawMessage(tt.schema))
		if err != nil {
			t.Fatalf("%s: %v", tt.schema, err)
		}
		if err := s.Validate(json.RawMessage(tt.data)); (err == nil) != tt.valid {
			t.Errorf("%s against %s: %v, want valid %v", tt.data, tt.schema, err, tt.valid)
		}
	}
	// The schema as written is what a provider is sent.
	if got, _ := schema.NewRegistry().Adapt(json.RawMessage(`{"type":"string","maxLength":`+big64+`}`), schema.Full); !strings.Contains(string(got), big64) {
		t.Errorf("Adapt changed the count: %s", got)
	}
}
