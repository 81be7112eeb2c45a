package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type refundParams struct {
	Tool       string            `json:"_tool" jsonschema:"enum=issueRefund"`
	CustomerID string            `json:"customerId" jsonschema:"description=The customer to refund,minLength=1"`
	Amount     float64           `json:"amount" jsonschema:"minimum=0" jsonschema_description:"Amount, in the currency's unit"`
	Currency   string            `json:"currency,omitempty" jsonschema:"enum=USD,enum=EUR"`
	Notify     *bool             `json:"notify,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
	Lines      []refundLine      `json:"lines,omitempty"`
	At         time.Time         `json:"at,omitzero"`
	Small      int8              `json:"small,omitempty"`
}

type refundLine struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity" jsonschema:"minimum=1"`
}

// tree is recursive: it keeps a $defs entry.
type tree struct {
	Name     string  `json:"name"`
	Children []*tree `json:"children,omitempty"`
}

// forest holds a recursive type below its root: that type stays in $defs.
type forest struct {
	Trees []tree `json:"trees"`
}

type inlineOnly struct {
	Meta  metaInfo  `json:"meta"`
	Other *metaInfo `json:"other,omitempty"`
}

type metaInfo struct {
	Version string `json:"version" jsonschema:"pattern=^[0-9]+$"`
}

func TestFor(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  json.RawMessage
	}{
		{"refund", For[refundParams]()},
		{"tree", For[tree]()},
		{"forest", For[forest]()},
		{"inline", For[inlineOnly]()},
		{"pointer", For[*metaInfo]()},
		{"scalar", For[string]()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, "for/"+tt.name+".json", indent(t, tt.got))
			if _, err := Compile(tt.got); err != nil {
				t.Errorf("For schema does not compile: %v", err)
			}
		})
	}
	a, b := For[refundParams](), For[refundParams]()
	if string(a) != string(b) {
		t.Error("For is not deterministic")
	}
}

func TestDecode(t *testing.T) {
	got, err := Decode[refundParams](raw(`{"_tool":"issueRefund","customerId":"c1","amount":5,"lines":[{"sku":"a","quantity":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := refundParams{Tool: "issueRefund", CustomerID: "c1", Amount: 5, Lines: []refundLine{{"a", 2}}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}

	// What strict OpenAI writes for the optional fields it leaves out.
	got, err = Decode[refundParams](raw(`{"_tool":"issueRefund","customerId":"c1","amount":5,"currency":null,"notify":null,"tags":null,"lines":[{"sku":"b","quantity":1}],"at":null,"small":null}`))
	if err != nil {
		t.Fatalf("nulls for optional fields: %v", err)
	}
	if want := (refundParams{Tool: "issueRefund", CustomerID: "c1", Amount: 5, Lines: []refundLine{{"b", 1}}}); !cmp.Equal(got, want) {
		t.Errorf("nulls for optional fields: %+v, want %+v", got, want)
	}

	for _, tt := range []struct {
		name, data string
		check      func(error) string
	}{
		{"null for a required field", `{"_tool":"issueRefund","customerId":null,"amount":1}`, func(err error) string {
			if ve, ok := errors.AsType[*ValidationError](err); !ok || ve.InstancePath != "/customerId" {
				return fmt.Sprintf("want a ValidationError at /customerId, got %v", err)
			}
			return ""
		}},
		{"validation", `{"_tool":"issueRefund","customerId":"c1","amount":-1}`, func(err error) string {
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok || ve.InstancePath != "/amount" {
				return fmt.Sprintf("want a ValidationError at /amount, got %v", err)
			}
			return ""
		}},
		{"extra property", `{"_tool":"issueRefund","customerId":"c1","amount":1,"x":1}`, func(err error) string {
			if _, ok := errors.AsType[*ValidationError](err); !ok {
				return fmt.Sprintf("want a ValidationError, got %v", err)
			}
			return ""
		}},
		{"out of an int8's range", `{"_tool":"issueRefund","customerId":"c1","amount":1,"small":300}`, func(err error) string {
			// The schema gives an int8 its range, so the model is told.
			if !strings.Contains(fmt.Sprint(err), "at /small: expected a number <= 127, got 300") {
				return fmt.Sprintf("want a validation error at /small, got %v", err)
			}
			return ""
		}},
		{"integer written 1.0", `{"_tool":"issueRefund","customerId":"c1","amount":1,"small":1.0}`, func(err error) string {
			// Valid (1.0 is an integer), but encoding/json does not put 1.0 in an int8.
			if de, ok := errors.AsType[*DecodeError](err); !ok || de.InstancePath != "/small" {
				return fmt.Sprintf("want a DecodeError at /small, got %v", err)
			}
			if _, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok {
				return "DecodeError does not unwrap to the json error"
			}
			return ""
		}},
		{"trailing data", `{"_tool":"issueRefund","customerId":"c1","amount":1}x`, func(err error) string {
			if !errors.Is(err, ErrInvalidJSON) {
				return fmt.Sprintf("want ErrInvalidJSON, got %v", err)
			}
			return ""
		}},
		{"syntax", `{"_tool":`, func(err error) string {
			if !errors.Is(err, ErrInvalidJSON) {
				return fmt.Sprintf("want ErrInvalidJSON, got %v", err)
			}
			return ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode[refundParams](raw(tt.data))
			if msg := tt.check(err); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// A comma escaped as \, in the source is bad struct tag syntax (go vet
// says so, which is why the type is made here at run time): reflect reads
// no jsonschema tag at all, and the field loses its description. Check
// reports it.
func TestCheckTagSyntax(t *testing.T) {
	bad := reflect.StructOf([]reflect.StructField{{
		Name: "City", Type: reflect.TypeFor[string](),
		Tag: reflect.StructTag(`json:"city" jsonschema:"description=A city\, e.g. Paris"`),
	}})
	err := checkTags(bad, map[reflect.Type]bool{})
	if err == nil {
		t.Fatal("checkTags took a tag reflect cannot read")
	}
	for _, want := range []string{".City", "not valid tag syntax", `written \\, in the struct tag`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkTags error %q does not say %s", err, want)
		}
	}
	good := reflect.StructOf([]reflect.StructField{{
		Name: "City", Type: reflect.TypeFor[string](),
		Tag: reflect.StructTag(`json:"city" jsonschema:"description=A city\\, e.g. Paris"`),
	}})
	if err := checkTags(good, map[reflect.Type]bool{}); err != nil {
		t.Errorf("checkTags(an escaped comma) = %v", err)
	}
}

type level uint8

type sized struct {
	I8    int8   `json:"i8"`
	I16   int16  `json:"i16"`
	I32   int32  `json:"i32"`
	I64   int64  `json:"i64"`
	U8    uint8  `json:"u8"`
	U16   uint16 `json:"u16"`
	U32   uint32 `json:"u32"`
	U     uint   `json:"u"`
	P     *uint8 `json:"p,omitempty"`
	Named level  `json:"named"`
	Tag   uint8  `json:"tag" jsonschema:"minimum=1,maximum=5"`
}

// TestForIntegerRanges: the integer types narrower than int64, and the
// unsigned ones, say their range; a named type and a field's own bounds
// are left as they are.
func TestForIntegerRanges(t *testing.T) {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(For[sized](), &s); err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string][2]any{
		"i8": {-128.0, 127.0}, "i16": {-32768.0, 32767.0}, "i32": {-2147483648.0, 2147483647.0}, "i64": {nil, nil},
		"u8": {0.0, 255.0}, "u16": {0.0, 65535.0}, "u32": {0.0, 4294967295.0}, "u": {0.0, nil}, "p": {0.0, 255.0},
		"named": {nil, nil}, "tag": {1.0, 5.0},
	} {
		p := s.Properties[field]
		if p["type"] != "integer" || p["minimum"] != want[0] || p["maximum"] != want[1] {
			t.Errorf("%s: %v, want minimum %v, maximum %v", field, p, want[0], want[1])
		}
	}
}
