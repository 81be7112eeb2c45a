package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// adaptRegistry holds the named schemas the adapt test cases refer to.
func adaptRegistry() *Registry {
	r := NewRegistry()
	r.Register("MetaSchema", raw(`{"type":"object","description":"Identity and version of the idea.",
		"properties":{"path":{"type":"string"},"version":{"type":"string","pattern":"^\\d+\\.\\d+\\.\\d+$"}},
		"required":["version"],"$schema":"https://json-schema.org/draft/2020-12/schema"}`))
	r.Register("Money", raw(`{"type":"object","properties":{"amount":{"type":"number","minimum":0},
		"currency":{"$ref":"#/$defs/currency"}},"required":["amount","currency"],
		"$defs":{"currency":{"type":"string","enum":["USD","EUR"]}}}`))
	r.Register("Game", raw(`{"type":"object","properties":{"score":{"type":"integer"},"next":{"$ref":"Game"}},
		"required":["score"]}`))
	return r
}

// TestAdapt adapts each testdata/adapt/<case>/input.json to every dialect and compares
// with <case>/<dialect>.json (the adapted schema, or the error).
func TestAdapt(t *testing.T) {
	r := adaptRegistry()
	dirs, err := filepath.Glob("testdata/adapt/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		in, err := os.ReadFile(filepath.Join(dir, "input.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []Dialect{Full, OpenAI, Anthropic, Gemini} {
			t.Run(filepath.Base(dir)+"/"+d.String(), func(t *testing.T) {
				got, err := r.Adapt(in, d)
				var out []byte
				if err != nil {
					out = fmt.Appendf(nil, "error: %v\n", err)
				} else {
					out = indent(t, got)
					if d != Gemini { // Gemini's upper-case types are not JSON Schema
						if _, err := Compile(got); err != nil {
							t.Errorf("adapted schema does not compile on its own: %v", err)
						}
					}
				}
				golden(t, filepath.Join("adapt", filepath.Base(dir), d.String()+".json"), out)
			})
		}
	}
}

func TestAdaptErrors(t *testing.T) {
	r := adaptRegistry()
	for _, tt := range []struct {
		name, schema string
		d            Dialect
		want         error
	}{
		{"openai recursion is fine", `{"type":"object","properties":{"g":{"$ref":"Game"}}}`, OpenAI, nil},
		{"anthropic recursion", `{"type":"object","properties":{"g":{"$ref":"Game"}}}`, Anthropic, ErrRecursive},
		{"gemini recursion", `{"type":"object","properties":{"g":{"$ref":"Game"}}}`, Gemini, ErrRecursive},
		{"gemini local recursion", `{"$defs":{"n":{"type":"object","properties":{"k":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, Gemini, ErrRecursive},
		{"openai map", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":true}}}`, OpenAI, ErrUnsupported},
		{"anthropic map", `{"type":"object","additionalProperties":{"type":"string"}}`, Anthropic, ErrUnsupported},
		{"openai scalar root", `{"type":"string"}`, OpenAI, ErrUnsupported},
		{"openai anyOf root", `{"anyOf":[{"type":"object"},{"type":"string"}]}`, OpenAI, ErrUnsupported},
		{"gemini null type", `{"type":"null"}`, Gemini, ErrUnsupported},
		{"gemini object without properties", `{"type":"object","properties":{"meta":{"type":"object","additionalProperties":true}}}`, Gemini, ErrUnsupported},
		{"gemini object with empty properties", `{"type":["object","null"],"properties":{}}`, Gemini, ErrUnsupported},
		{"allOf conflict", `{"type":"object","allOf":[{"type":"string"}]}`, OpenAI, ErrUnsupported},
		{"unknown name", `{"type":"object","properties":{"x":{"$ref":"Nope"}}}`, Full, ErrUnknownRef},
		{"pointer to nowhere", `{"$ref":"#/$defs/none"}`, Gemini, ErrInvalidRef},
		{"bad json", `{`, Full, ErrInvalidJSON},
		{"unknown dialect", `{}`, Dialect(9), ErrUnsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Adapt(raw(tt.schema), tt.d)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Adapt(%s, %v) = %v, want %v", tt.schema, tt.d, err, tt.want)
			}
		})
	}
}

func TestAdaptFullUnchanged(t *testing.T) {
	in := raw(`{ "type": "object",  "properties": {"b": {"type": "string"}, "a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}} }`)
	got, err := Adapt(in, Full)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in) {
		t.Errorf("Full changed a schema with no names and no nullable:\ngot  %s\nwant %s", got, in)
	}
}

func TestAdaptDoesNotMutate(t *testing.T) {
	r := adaptRegistry()
	before, _ := r.Lookup("MetaSchema")
	in := raw(`{"type":"object","properties":{"m":{"$ref":"MetaSchema"},"o":{"type":"object","nullable":true,"properties":{"k":{"type":"string"}}}}}`)
	inCopy := bytes.Clone(in)
	for _, d := range []Dialect{Full, OpenAI, Anthropic, Gemini} {
		if _, err := r.Adapt(in, d); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := r.Lookup("MetaSchema")
	if !bytes.Equal(in, inCopy) || !bytes.Equal(before, after) {
		t.Error("Adapt modified its input or the registry")
	}
	s, err := r.Schema("MetaSchema")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(raw(`{"version":"1.0.0","extra":1}`)); err != nil {
		t.Errorf("registered schema changed by adapting: %v", err)
	}
}

// TestCompileForOpenAI checks that answers to the OpenAI-adapted schema, which carry null
// for the optional properties, validate with CompileFor and not with Compile.
func TestCompileForOpenAI(t *testing.T) {
	r := adaptRegistry()
	in := raw(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0},
		"meta":{"$ref":"MetaSchema"}},"required":["name"]}`)
	answer := raw(`{"name":"Ann","age":null,"meta":{"path":null,"version":"1.0.0"}}`)
	adapted, err := r.Adapt(in, OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := r.Compile(adapted)
	if err != nil {
		t.Fatal(err)
	}
	if err := strict.Validate(answer); err != nil {
		t.Fatalf("the answer does not fit the adapted schema: %v", err)
	}
	plain, _ := r.Compile(in)
	if plain.Validate(answer) == nil {
		t.Fatal("Compile accepts null for an optional property")
	}
	relaxed, err := r.CompileFor(in, OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	if err := relaxed.Validate(answer); err != nil {
		t.Errorf("CompileFor(OpenAI) rejects the answer: %v", err)
	}
	if relaxed.Validate(raw(`{"name":"Ann","age":-1}`)) == nil {
		t.Error("CompileFor(OpenAI) lost the minimum")
	}
	if same, _ := r.CompileFor(in, Anthropic); same != plain {
		t.Error("CompileFor(Anthropic) is not Compile")
	}
}

// geminiSchema mirrors the fields of google.golang.org/genai's Schema, the type a Gemini
// adapter decodes the adapted schema into.
type geminiSchema struct {
	AnyOf            []*geminiSchema          `json:"anyOf,omitempty"`
	Default          any                      `json:"default,omitempty"`
	Description      string                   `json:"description,omitempty"`
	Enum             []string                 `json:"enum,omitempty"`
	Example          any                      `json:"example,omitempty"`
	Format           string                   `json:"format,omitempty"`
	Items            *geminiSchema            `json:"items,omitempty"`
	MaxItems         *int64                   `json:"maxItems,omitempty"`
	MaxLength        *int64                   `json:"maxLength,omitempty"`
	MaxProperties    *int64                   `json:"maxProperties,omitempty"`
	Maximum          *float64                 `json:"maximum,omitempty"`
	MinItems         *int64                   `json:"minItems,omitempty"`
	MinLength        *int64                   `json:"minLength,omitempty"`
	MinProperties    *int64                   `json:"minProperties,omitempty"`
	Minimum          *float64                 `json:"minimum,omitempty"`
	Nullable         *bool                    `json:"nullable,omitempty"`
	Pattern          string                   `json:"pattern,omitempty"`
	Properties       map[string]*geminiSchema `json:"properties,omitempty"`
	PropertyOrdering []string                 `json:"propertyOrdering,omitempty"`
	Required         []string                 `json:"required,omitempty"`
	Title            string                   `json:"title,omitempty"`
	Type             string                   `json:"type,omitempty"`
}

func TestAdaptGeminiDecodes(t *testing.T) {
	files, _ := filepath.Glob("testdata/adapt/*/gemini.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.HasPrefix(b, []byte("error:")) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var s geminiSchema
		if err := dec.Decode(&s); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestAdaptKeepsRecent checks that Adapt's cache gives what adapting
// gives, a copy the caller may change, per dialect, and forgets the
// oldest past its size.
func TestAdaptKeepsRecent(t *testing.T) {
	src := raw(solutionSchema(3))
	want, err := (*Registry)(nil).Adapt(src, OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := Adapt(src, OpenAI)
		if err != nil || string(got) != string(want) {
			t.Fatalf("Adapt = %s, %v; want %s", got, err, want)
		}
		for i := range got {
			got[i] = 'x' // the caller's copy
		}
	}
	if g, _ := Adapt(src, Gemini); string(g) == string(want) {
		t.Error("the Gemini adaptation came from the OpenAI one")
	}
	for i := range adaptCacheSize + 1 {
		if _, err := Adapt(json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"p%d":{"type":"string"}}}`, i)), Full); err != nil {
			t.Fatal(err)
		}
	}
	adapted.mu.Lock()
	n := len(adapted.m)
	adapted.mu.Unlock()
	if n > adaptCacheSize {
		t.Errorf("the cache holds %d adaptations, more than %d", n, adaptCacheSize)
	}
}
