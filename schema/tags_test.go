package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

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
