package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	ij "github.com/invopop/jsonschema"

	"github.com/augceo/agent/schema"
)

type audited struct {
	X    int    `json:"x" jsonschema:"description=The number,minimum=0"`
	Note string `json:"note,omitempty" jsonschema:"description=Why it is looked up, for the audit log"`
}

type auditedDeep struct {
	Items []*audited `json:"items"`
}

type auditedFine struct {
	Pattern string         `json:"pattern" jsonschema:"pattern=^a\\,b$,required,nullable"`
	Long    string         `json:"long" jsonschema_description:"Why, and for whom"`
	Escaped string         `json:"escaped" jsonschema:"description=One\\, two"`
	Skipped chan int       `json:"-" jsonschema:"description=never, seen"`
	private string         `jsonschema:"description=not, exported"`
	Self    *auditedFine   `json:"self,omitempty"`
	Map     map[string]int `json:"map,omitempty" jsonschema:"-"`
}

// A description with a comma in a jsonschema tag ends at the comma, and
// invopop drops the rest silently: the model would read half of what the
// user wrote. Check says where, at any depth.
func TestCheckTags(t *testing.T) {
	for _, err := range []error{schema.Check[audited](), schema.Check[auditedDeep](), schema.Check[[]map[string]audited]()} {
		if err == nil {
			t.Fatal("Check accepted a description cut at a comma")
		}
		for _, want := range []string{"audited.Note", `" for the audit log"`, "jsonschema_description"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Check error %q does not say %s", err, want)
			}
		}
	}
	// What validates does not depend on a description.
	if v, err := schema.Decode[audited](json.RawMessage(`{"x":1}`)); err != nil || v.X != 1 {
		t.Errorf("Decode = %+v, %v", v, err)
	}
	if err := schema.Check[auditedFine](); err != nil {
		t.Errorf("Check(auditedFine) = %v", err)
	}
	var _ = auditedFine{}.private
	if err := schema.Check[chan int](); err == nil {
		t.Error("Check accepted a channel, which has no JSON Schema")
	}
	if err := schema.Check[int](); err != nil {
		t.Errorf("Check[int] = %v", err)
	}
}

type spacedTags struct {
	Code string `json:"code" jsonschema:"minLength=2, maxLength=3"`
}

type describedWithEquals struct {
	Q string `json:"q" jsonschema:"description=Search query, written as field=value"`
}

// Check reports a tag part the reflector drops though it has an "=".
// A part with "=" is dropped too when its keyword is none the reflector
// reads: " maxLength" after a comma and a space, the rest of a cut
// description.
func TestCheckDroppedWithEquals(t *testing.T) {
	if err := schema.Check[spacedTags](); err == nil {
		t.Errorf("Check took the dropped maxLength: %s", schema.For[spacedTags]())
	}
	if err := schema.Check[describedWithEquals](); err == nil {
		t.Errorf("Check took the cut description: %s", schema.For[describedWithEquals]())
	}
}

type money struct {
	Units int64 `json:"units" jsonschema:"whole units, e.g. dollars"` // another library's tag
}

func (money) JSONSchema() *ij.Schema { return &ij.Schema{Type: "string", Pattern: `^\d+\.\d\d$`} }

type order struct {
	Total money `json:"total"`
}

// A type that gives its own schema is not reflected: its fields' tags
// are never read.
// The fields of a type that gives its own schema are not read, nor are
// their tags.
func TestCheckCustomSchema(t *testing.T) {
	if err := schema.Check[order](); err != nil {
		t.Errorf("Check: %v; the schema %s reads no tag of money", err, schema.For[order]())
	}
}
