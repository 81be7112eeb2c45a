package strict_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

var dialects = []schema.Dialect{schema.OpenAI, schema.Anthropic, schema.Gemini}

// TestSpecSchemasAdapt adapts each schema of the spec pages to each
// dialect and checks the result against that provider's rules.
func TestSpecSchemasAdapt(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "spec_schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Schemas []struct {
			Page, Name string
			Schema     json.RawMessage
			Known      map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, ex := range file.Schemas {
		for _, d := range dialects {
			t.Run(ex.Page+" "+ex.Name+"/"+d.String(), func(t *testing.T) {
				var wantErr string
				var want []string
				if k, ok := ex.Known[d.String()]; ok {
					if json.Unmarshal(k, &wantErr) != nil {
						if err := json.Unmarshal(k, &want); err != nil {
							t.Fatal(err)
						}
					}
				}
				adapted, over, err := schema.AdaptStrict(ex.Schema, d)
				if over != nil {
					t.Errorf("AdaptStrict says the schema is over a limit: %v", over)
				}
				if wantErr != "" {
					if !errors.Is(err, schema.ErrUnsupported) {
						t.Errorf("Adapt: got %v, want ErrUnsupported", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Adapt: %v", err)
				}
				got := violations(t, strict.Check(d, json.RawMessage(adapted)))
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("violations %q, want %q\nadapted: %s\nerror: %v", got, want, adapted, strict.Check(d, json.RawMessage(adapted)))
				}
			})
		}
	}
}
