package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		for _, d := range []Dialect{Full, OpenAI, Anthropic, Gemini, GeminiJSON} {
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
		{"anthropic recursion is left to AdaptStrict", `{"type":"object","properties":{"g":{"$ref":"Game"}}}`, Anthropic, nil},
		{"gemini recursion", `{"type":"object","properties":{"g":{"$ref":"Game"}}}`, Gemini, ErrRecursive},
		{"gemini local recursion", `{"$defs":{"n":{"type":"object","properties":{"k":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`, Gemini, ErrRecursive},
		{"openai map is left to AdaptStrict", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":true}}}`, OpenAI, nil},
		{"anthropic map is left to AdaptStrict", `{"type":"object","additionalProperties":{"type":"string"}}`, Anthropic, nil},
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
	cache.mu.Lock()
	n := 0
	for _, m := range cache.m {
		n += len(m)
	}
	cache.mu.Unlock()
	if n > adaptCacheSize {
		t.Errorf("the cache holds %d adaptations, more than %d", n, adaptCacheSize)
	}
}

// TestAdaptKeepsErrors checks that Adapt's cache keeps a schema a dialect
// cannot say, with its error: the Gemini adapter tries its subset at
// every request before it falls back.
func TestAdaptKeepsErrors(t *testing.T) {
	src := raw(`{"type":"object","properties":{"next":{"$ref":"#"}}}`)
	_, _, want := AdaptStrict(src, Gemini)
	if want == nil {
		t.Fatal("Gemini adapted a recursive schema")
	}
	if e, ok := cache.get(src, Gemini); !ok || e.err != want {
		t.Errorf("the cache holds %+v, %v; want the error %v", e, ok, want)
	}
	if _, _, err := AdaptStrict(src, Gemini); err != want {
		t.Errorf("again: %v, want %v", err, want)
	}
}

// TestAdaptStrictMap: a map has no form in OpenAI's and Anthropic's strict
// modes, which want every object closed; AdaptStrict keeps it and reports
// it as a limit, so the adapter sends the schema with strict mode off.
func TestAdaptStrictMap(t *testing.T) {
	for _, src := range []string{
		`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}},"required":["labels"]}`,
		`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":true}},"required":["labels"]}`,
	} {
		for _, d := range []Dialect{OpenAI, Anthropic} {
			adapted, over, err := AdaptStrict(raw(src), d)
			if err != nil {
				t.Fatalf("%v: %v", d, err)
			}
			if over == nil || over.At != "/properties/labels" || !strings.Contains(over.Error(), "maps") {
				t.Errorf("%v: over = %v, want the map at /properties/labels", d, over)
			}
			if !strings.Contains(adapted, `"additionalProperties":{"type":"string"}`) && !strings.Contains(adapted, `"additionalProperties":true`) {
				t.Errorf("%v: the map is gone: %s", d, adapted)
			}
		}
	}
	// A closed object is no map.
	if _, over, err := AdaptStrict(raw(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`), OpenAI); over != nil || err != nil {
		t.Errorf("a closed object: %v, %v", over, err)
	}
}

// TestAdaptCompact checks what the provider adapters rely on to write
// the adapted schema into a request body as it is: in every provider's
// dialect it is compact JSON, whatever the spacing of the original (Full
// keeps the original: TestAdaptFullUnchanged).
func TestAdaptCompact(t *testing.T) {
	for _, src := range []string{
		solutionSchema(3),
		`{"type":"object", "properties": {"a": {"type": "string", "description": "x < y"}}}`,
	} {
		for d := OpenAI; d <= GeminiJSON; d++ {
			adapted, _, err := AdaptStrict(raw(src), d)
			if err != nil {
				t.Fatalf("%v: %v", d, err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(adapted)); err != nil || compact.String() != adapted {
				t.Errorf("%v: AdaptStrict(%s) = %s, not compact (%v)", d, src, adapted, err)
			}
		}
	}
}

// TestAdaptDialectRules checks, one rule at a time, what a dialect makes of a
// schema the provider would reject as it is: the adapted schema at ptr.
func TestAdaptDialectRules(t *testing.T) {
	const jsonValue = `{"description":"Any JSON value: a string, number, boolean, null, an array of such values, or an object, of which only {} can be written here.",` +
		`"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"null"},{"type":"array","items":{"$ref":"#/$defs/JSONValue"}},` +
		`{"type":"object","properties":{},"required":[],"additionalProperties":false}]}`
	for _, tt := range []struct {
		name   string
		d      Dialect
		schema string
		ptr    string
		want   string
	}{
		{"openai: an array gets items", OpenAI, `{"type":"object","properties":{"tags":{"type":"array"}},"required":["tags"]}`,
			"/properties/tags", `{"type":"array","items":{"$ref":"#/$defs/JSONValue"}}`},
		{"openai: JSONValue is defined once", OpenAI, `{"type":"object","properties":{"tags":{"type":"array"},"v":{}},"required":["tags","v"]}`,
			"/$defs/JSONValue", jsonValue},
		{"openai: a free-form value", OpenAI, `{"type":"object","properties":{"v":{}},"required":["v"]}`,
			"/properties/v", `{"$ref":"#/$defs/JSONValue"}`},
		{"openai: an optional free-form value already takes null", OpenAI, `{"type":"object","properties":{"v":true}}`,
			"/properties/v", `{"$ref":"#/$defs/JSONValue"}`},
		{"openai: a described, constrained free-form value", OpenAI, `{"type":"object","properties":{"v":{"description":"any","minLength":2}},"required":["v"]}`,
			"/properties/v", `{"description":"any (minLength: 2)","anyOf":[{"$ref":"#/$defs/JSONValue"}]}`},
		{"openai: JSONValue takes another name when it is taken", OpenAI,
			`{"type":"object","properties":{"v":{},"w":{"$ref":"#/$defs/JSONValue"}},"required":["v","w"],"$defs":{"JSONValue":{"type":"string"}}}`,
			"/properties/v", `{"$ref":"#/$defs/JSONValue_2"}`},
		{"openai: properties without a type", OpenAI, `{"type":"object","properties":{"p":{"properties":{"a":{"type":"string"}},"required":["a"]}},"required":["p"]}`,
			"/properties/p", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{"openai: a $ref with a description", OpenAI, `{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"the a"}},"required":["a"],"$defs":{"s":{"type":"string"}}}`,
			"/properties/a", `{"description":"the a","anyOf":[{"$ref":"#/$defs/s"}]}`},
		{"openai: an optional $ref with a description", OpenAI, `{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"the a"}},"$defs":{"s":{"type":"string"}}}`,
			"/properties/a", `{"description":"the a","anyOf":[{"$ref":"#/$defs/s"},{"type":"null"}]}`},
		{"openai: a definition only optional properties use takes null itself", OpenAI,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"},"c":{"$ref":"#/$defs/m"}},"$defs":{"s":{"type":"string","description":"an s"},"m":{"enum":["x","y"]}}}`,
			"", `{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"},"c":{"anyOf":[{"$ref":"#/$defs/m"},{"type":"null"}]}},"$defs":{"s":{"type":["string","null"],"description":"an s"},"m":{"enum":["x","y"]}},"additionalProperties":false,"required":["a","b","c"]}`},
		{"openai: a definition a required property uses stays", OpenAI,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"},"c":{"$ref":"#/$defs/s"}},"required":["c"],"$defs":{"s":{"type":"string"}}}`,
			"", `{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/$defs/s"},{"type":"null"}]},"b":{"anyOf":[{"$ref":"#/$defs/s"},{"type":"null"}]},"c":{"$ref":"#/$defs/s"}},"required":["a","b","c"],"$defs":{"s":{"type":"string"}},"additionalProperties":false}`},
		{"openai: a definition referred into stays", OpenAI,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/o"},"b":{"$ref":"#/$defs/o"},"c":{"$ref":"#/$defs/o/properties/v"}},"required":["c"],"$defs":{"o":{"type":"object","properties":{"v":{"type":"string"}},"required":["v"]}}}`,
			"/properties/a", `{"anyOf":[{"$ref":"#/$defs/o"},{"type":"null"}]}`},
		{"openai: a nullable definition's own optional uses", OpenAI,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}`,
			"", `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":["object","null"],"properties":{"next":{"$ref":"#/$defs/n"}},"additionalProperties":false,"required":["next"]}},"additionalProperties":false,"required":["a","b"]}`},
		{"openai: a free-form object", OpenAI, `{"type":"object","properties":{"o":{"type":"object"}},"required":["o"]}`,
			"/properties/o", `{"type":"object","description":"(any object, but only {} can be written here)","properties":{},"additionalProperties":false,"required":[]}`},
		{"openai: a closed empty object", OpenAI, `{"type":"object","properties":{"o":{"type":"object","additionalProperties":false}},"required":["o"]}`,
			"/properties/o", `{"type":"object","additionalProperties":false,"properties":{},"required":[]}`},
		{"openai: a false property cannot be there", OpenAI, `{"type":"object","properties":{"a":{"type":"string"},"b":false},"required":["a"]}`,
			"", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`},
		{"anthropic: a lookahead", Anthropic, `{"type":"object","properties":{"code":{"type":"string","pattern":"^(?!0)[0-9]+$"}}}`,
			"/properties/code", `{"type":"string","description":"(pattern: \"^(?!0)[0-9]+$\")"}`},
		{"anthropic: a word boundary", Anthropic, `{"type":"object","properties":{"w":{"type":"string","pattern":"\\bcat\\b","description":"a cat"}}}`,
			"/properties/w", `{"type":"string","description":"a cat (pattern: \"\\\\bcat\\\\b\")"}`},
		{"anthropic: a backspace in a class is fine", Anthropic, `{"type":"object","properties":{"w":{"type":"string","pattern":"^[\\b(?=]+$"}}}`,
			"/properties/w", `{"type":"string","pattern":"^[\\b(?=]+$"}`},
		{"anthropic: a named group is no lookbehind", Anthropic, `{"type":"object","properties":{"w":{"type":"string","pattern":"^(?<year>[0-9]{4})$"}}}`,
			"/properties/w", `{"type":"string","pattern":"^(?<year>[0-9]{4})$"}`},
		{"anthropic: a free-form object", Anthropic, `{"type":"object","properties":{"o":{"type":"object"}}}`,
			"/properties/o", `{"type":"object","description":"(any object, but only {} can be written here)","additionalProperties":false}`},
		{"gemini: int32 on a number", Gemini, `{"type":"object","properties":{"n":{"type":"number","format":"int32"}}}`,
			"/properties/n", `{"type":"NUMBER","description":"(format: \"int32\")"}`},
		{"gemini: int64 on an integer", Gemini, `{"type":"object","properties":{"n":{"type":"integer","format":"int64"}}}`,
			"/properties/n", `{"type":"INTEGER","format":"int64"}`},
		{"gemini: a const array", Gemini, `{"type":"object","properties":{"_scopes":{"const":["input"]}}}`,
			"/properties/_scopes", `{"type":"ARRAY","items":{"type":"STRING","enum":["input"]},"minItems":1,"maxItems":1,"description":"(one of: [[\"input\"]])"}`},
		{"gemini: an enum of arrays", Gemini, `{"type":"object","properties":{"e":{"enum":[[],[1,2.5]]}}}`,
			"/properties/e", `{"type":"ARRAY","items":{"type":"NUMBER"},"minItems":0,"maxItems":2,"description":"(one of: [[],[1,2.5]])"}`},
		{"gemini: a const object", Gemini, `{"type":"object","properties":{"o":{"const":{"k":"v","n":null}}}}`,
			"/properties/o", `{"type":"OBJECT","properties":{"k":{"type":"STRING","enum":["v"]},"n":{}},"required":["k","n"],"propertyOrdering":["k","n"],"description":"(one of: [{\"k\":\"v\",\"n\":null}])"}`},
		{"gemini-json: const, pattern and nullable", GeminiJSON,
			`{"type":"object","properties":{"_tool":{"const":"put"},"p":{"type":"string","pattern":"^†","nullable":true}},"required":["_tool"]}`,
			"", `{"type":"object","properties":{"_tool":{"enum":["put"]},"p":{"type":["string","null"],"description":"(pattern: \"^†\")"}},"required":["_tool"]}`},
		{"gemini-json: an enum with null and booleans", GeminiJSON, `{"type":"object","properties":{"m":{"enum":["a",null,true]}}}`,
			"/properties/m", `{"anyOf":[{"type":"boolean"},{"type":"string","enum":["a"]},{"type":"null"}],"description":"(one of: [\"a\",null,true])"}`},
		{"gemini-json: a nullable enum is exact", GeminiJSON, `{"type":"object","properties":{"m":{"type":"string","enum":["a","b"],"nullable":true}}}`,
			"/properties/m", `{"type":["string","null"],"anyOf":[{"type":"string","enum":["a","b"]},{"type":"null"}]}`},
		{"gemini-json: a $ref with a description", GeminiJSON, `{"type":"object","properties":{"a":{"$ref":"#/$defs/s","description":"the a"}},"$defs":{"s":{"type":"string"}}}`,
			"/properties/a", `{"description":"the a","anyOf":[{"$ref":"#/$defs/s"}]}`},
		{"gemini-json: definitions become $defs", GeminiJSON, `{"type":"object","properties":{"d":{"$ref":"#/definitions/d"}},"definitions":{"d":{"type":"string"}}}`,
			"", `{"type":"object","properties":{"d":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string"}}}`},
		{"gemini-json: a required recursive property is unrolled once", GeminiJSON,
			`{"type":"object","properties":{"g":{"$ref":"#/$defs/g"}},"required":["g"],"$defs":{"g":{"type":"object","properties":{"next":{"$ref":"#/$defs/g"}}}}}`,
			"/properties/g", `{"type":"object","properties":{"next":{"$ref":"#/$defs/g"}}}`},
		{"gemini-json: a required property inside the recursion is not", GeminiJSON,
			`{"type":"object","properties":{"g":{"$ref":"#/$defs/g"}},"$defs":{"g":{"type":"object","properties":{"n":{"type":"integer"},"next":{"$ref":"#/$defs/g"}},"required":["n","next"]}}}`,
			"/$defs/g", `{"type":"object","properties":{"n":{"type":"integer"},"next":{"$ref":"#/$defs/g"}},"required":["n"],"description":"(also required: next)"}`},
		{"gemini-json: maps and free-form objects stay", GeminiJSON,
			`{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}},"o":{"type":"object"}}}`,
			"/properties", `{"m":{"type":"object","additionalProperties":{"type":"string"}},"o":{"type":"object"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Adapt(raw(tt.schema), tt.d)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := parseTree(got)
			if err != nil {
				t.Fatal(err)
			}
			at, ok := lookupPointer(tree, tt.ptr)
			if !ok {
				t.Fatalf("nothing at %q of %s", tt.ptr, got)
			}
			if s := string(marshalTree(at)); s != tt.want {
				t.Errorf("at %q:\ngot  %s\nwant %s\nin %s", tt.ptr, s, tt.want, got)
			}
		})
	}
}

// TestAdaptLocalValidation checks the trade-off of the free-form values:
// what the adapted schema lets a strict model write, the original accepts
// (so local validation decides), and what strict mode cannot write (an
// object with keys) the original still accepts.
func TestAdaptLocalValidation(t *testing.T) {
	original := raw(`{"type":"object","properties":{"tags":{"type":"array"},"v":{},"o":{"type":"object"},"s":{"const":["input"]}},"required":["tags","v","o"]}`)
	writable := []string{
		`{"tags":[1,"a",[true,null,[2]],{}],"v":{},"o":{},"s":["input"]}`,
		`{"tags":[],"v":[[1],"x"],"o":{},"s":null}`,
		`{"tags":["x"],"v":null,"o":{},"s":null}`,
	}
	notWritable := `{"tags":[{"k":1}],"v":{"k":1},"o":{"k":1}}`
	for _, d := range []Dialect{OpenAI, Anthropic, GeminiJSON} {
		adapted, err := Adapt(original, d)
		if err != nil {
			t.Fatal(err)
		}
		strict, err := Compile(adapted)
		if err != nil {
			t.Fatalf("%v: %v", d, err)
		}
		local, err := (*Registry)(nil).CompileFor(original, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range writable {
			if d != OpenAI { // optional properties stay optional: null is no absence
				v = strings.ReplaceAll(v, `,"s":null`, "")
			}
			if err := strict.Validate(raw(v)); err != nil {
				t.Errorf("%v: the adapted schema rejects %s: %v", d, v, err)
			}
			if err := local.Validate(raw(v)); err != nil {
				t.Errorf("%v: local validation rejects %s: %v", d, v, err)
			}
		}
		if d == OpenAI && strict.Validate(raw(notWritable)) == nil {
			t.Errorf("%v: the adapted schema lets the model write keys in a free-form object", d)
		}
		if err := local.Validate(raw(notWritable)); err != nil {
			t.Errorf("%v: local validation rejects %s: %v", d, notWritable, err)
		}
	}
}

func TestInlineLocal(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{`{"type":"object","properties":{"at":{"$ref":"#/$defs/P","description":"Where."}},"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}}}}}`,
			`{"type":"object","properties":{"at":{"type":"object","properties":{"x":{"type":"integer"}},"description":"Where."}}}`, ""},
		{`{"properties":{"c":{"$ref":"City"},"d":{"$ref":"#/definitions/D"}},"definitions":{"D":{"type":"boolean"}}}`,
			`{"properties":{"c":{"$ref":"City"},"d":{"type":"boolean"}}}`, ""},
		// An unused recursive definition is dropped; a used one cannot be inlined.
		{`{"type":"object","$defs":{"n":{"properties":{"next":{"$ref":"#/$defs/n"}}}}}`, `{"type":"object"}`, ""},
		{`{"properties":{"l":{"$ref":"#/$defs/n"}},"$defs":{"n":{"properties":{"next":{"$ref":"#/$defs/n"}}}}}`, "", "recursive"},
		{`{"properties":{"a":{"$ref":"#/$defs/none"}}}`, "", "points nowhere"},
	} {
		got, err := InlineLocal(json.RawMessage(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("InlineLocal(%s) = %s, %v; want an error saying %s", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("InlineLocal(%s)\n= %s, %v\nwant %s", tt.in, got, err, tt.want)
		}
	}
}

// An anyOf or oneOf whose alternatives only refine an object ("either id
// or name", a discriminator's cases) is no value of its own. OpenAI and
// Anthropic close every object, alternatives too, which made such a
// schema refuse every value; it goes to the description instead, and the
// answer is validated against the schema as written. A case's own
// properties join the object's, optional, where the model can write them.
func TestAdaptRefinements(t *testing.T) {
	for _, tt := range []struct{ name, schema, openai, anthropic string }{
		{"either id or name", `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"oneOf":[{"required":["id"]},{"required":["name"]}]}`,
			`{"id":"u1","name":null}`, `{"id":"u1"}`},
		{"a discriminator's cases", `{"type":"object","properties":{"kind":{"enum":["a","b"]},"x":{"type":"string"}},"required":["kind"],"anyOf":[{"properties":{"kind":{"const":"a"}},"required":["x"]},{"type":"object","properties":{"kind":{"const":"b"}}}]}`,
			`{"kind":"a","x":"s"}`, `{"kind":"a","x":"s"}`},
		{"cases with their own properties", `{"type":"object","properties":{"method":{"enum":["card","bank"]}},"required":["method"],
			"oneOf":[{"properties":{"method":{"const":"card"},"card":{"type":"string"}},"required":["card"]},
			         {"properties":{"method":{"const":"bank"},"iban":{"type":"string"}},"required":["iban"]}]}`,
			`{"method":"card","card":"4111","iban":null}`, `{"method":"card","card":"4111"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for d, value := range map[Dialect]string{OpenAI: tt.openai, Anthropic: tt.anthropic} {
				ad, err := Adapt(json.RawMessage(tt.schema), d)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Compile(ad)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Validate(json.RawMessage(value)); err != nil {
					t.Errorf("%v: %s does not fit the schema sent %s: %v", d, value, ad, err)
				}
				if !strings.Contains(string(ad), `"description":"(`) || strings.Contains(string(ad), `"anyOf"`) || strings.Contains(string(ad), `"oneOf"`) {
					t.Errorf("%v: the alternatives are not noted instead: %s", d, ad)
				}
			}
		})
	}
	// Alternatives of other types stay: the value is one or the other.
	ad, err := Adapt(json.RawMessage(`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"object","properties":{"k":{"type":"string"}}}]}}}`), OpenAI)
	if err != nil || !strings.Contains(string(ad), `"anyOf"`) {
		t.Errorf("a union of types lost its anyOf: %s, %v", ad, err)
	}
}

// Refinements written as local refs are refinements all the same.
func TestAdaptRefinementRefs(t *testing.T) {
	s := `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},
		"$defs":{"ById":{"required":["id"]},"ByName":{"required":["name"]}},
		"oneOf":[{"$ref":"#/$defs/ById"},{"$ref":"#/$defs/ByName"}]}`
	ad, err := Adapt(json.RawMessage(s), OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(ad)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(json.RawMessage(`{"id":"u1","name":null}`)); err != nil {
		t.Errorf("no value fits the schema sent %s: %v", ad, err)
	}
}

// TestAdaptUnusedDefs checks that the schema sent keeps only the
// definitions a ref reaches, or a description names, since the model pays
// to read each.
func TestAdaptUnusedDefs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		d       Dialect
		schema  string
		defs    []string // the keys of $defs sent, in order
		inDescr string   // a part of the root's description, if any
	}{
		{"refinements by ref, openai", OpenAI,
			`{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},
			"$defs":{"ById":{"required":["id"]},"ByName":{"required":["name"]}},
			"oneOf":[{"$ref":"#/$defs/ById"},{"$ref":"#/$defs/ByName"}]}`,
			nil, `(oneOf: [{"required":["id"]},{"required":["name"]}])`},
		{"refinements by ref, anthropic", Anthropic,
			`{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},
			"$defs":{"ById":{"required":["id"]},"ByName":{"required":["name"]}},
			"anyOf":[{"$ref":"#/$defs/ById"},{"$ref":"#/$defs/ByName"}]}`,
			nil, `(anyOf: [{"required":["id"]},{"required":["name"]}])`},
		{"a definition only a definition reaches", Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},
			"$defs":{"Unused":{"type":"string"},"A":{"type":"array","items":{"$ref":"#/$defs/B"}},"B":{"type":"integer"}}}`,
			[]string{"A", "B"}, ""},
		{"a recursive definition", Anthropic,
			`{"type":"object","properties":{"t":{"$ref":"#/$defs/Tree"}},
			"$defs":{"Tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Tree"}}}},"Other":{"type":"null"}}}`,
			[]string{"Tree"}, ""},
		{"a ref into a definition", Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/A/properties/x"}},
			"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}}},"Other":{"type":"null"}}}`,
			[]string{"A"}, ""},
		{"a definition a moved case still names", Anthropic,
			`{"type":"object","properties":{"kind":{"type":"string"}},
			"$defs":{"Box":{"type":"object","properties":{"w":{"type":"number"}}},"Other":{"type":"null"}},
			"oneOf":[{"properties":{"box":{"$ref":"#/$defs/Box"}}},{"properties":{"box":{"type":"null"},"v":{"$ref":"#/$defs/Box"}}}]}`,
			[]string{"Box"}, `#/$defs/Box`},
		{"a percent-encoded ref", Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/My%20Type"}},
			"$defs":{"My Type":{"type":"string"},"Other":{"type":"null"}}}`,
			[]string{"My Type"}, ""},
		{"a ref to an anchor", Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#a"}},
			"$defs":{"A":{"$anchor":"a","type":"string"},"Other":{"type":"null"}}}`,
			[]string{"A"}, ""},
		{"a ref to an anchor in a definition whose key a URI escapes", Anthropic,
			`{"type":"object","properties":{"a":{"$ref":"#a"}},
			"$defs":{"50% off":{"$anchor":"a","type":"string"},"Other":{"type":"null"}}}`,
			[]string{"50% off"}, ""},
		{"unused definitions, gemini_json", GeminiJSON,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"},"Other":{"type":"null"}}}`,
			[]string{"A"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ad, err := Adapt(json.RawMessage(tt.schema), tt.d)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := parseTree(ad)
			if err != nil {
				t.Fatal(err)
			}
			root := tree.(*object)
			var keys []string
			if d, ok := root.get("$defs"); ok {
				for _, m := range d.(*object).members {
					keys = append(keys, m.key)
				}
			}
			if !slices.Equal(keys, tt.defs) {
				t.Errorf("$defs %q, want %q\nin %s", keys, tt.defs, ad)
			}
			descr, _ := root.get("description")
			if s, _ := descr.(string); !strings.Contains(s, tt.inDescr) {
				t.Errorf("description %q, want it to contain %q", s, tt.inDescr)
			}
			if _, err := Compile(ad); err != nil {
				t.Errorf("the schema sent does not compile: %v\n%s", err, ad)
			}
		})
	}
}

// TestAdaptAnchors checks that a ref to an $anchor, which the strict
// dialects drop, still points where it did in the schema sent: in the
// schema and in a named schema bundled into $defs.
func TestAdaptAnchors(t *testing.T) {
	r := NewRegistry()
	r.Register("Node", json.RawMessage(`{"type":"object","properties":{"label":{"$ref":"#label"},"next":{"$ref":"#"}},
		"$defs":{"Label":{"$anchor":"label","type":"string","maxLength":3}}}`))
	s := json.RawMessage(`{"type":"object","properties":{"n":{"$ref":"Node"},"c":{"$ref":"#code"}},
		"$defs":{"Code":{"$anchor":"code","type":"integer"}}}`)
	want := map[string]string{
		"/properties/n":                "#/$defs/Node",
		"/properties/c":                "#/$defs/Code",
		"/$defs/Node/properties/label": "#/$defs/Node/$defs/Label",
		"/$defs/Node/properties/next":  "#/$defs/Node",
	}
	for _, d := range []Dialect{Full, OpenAI, Anthropic, GeminiJSON} {
		t.Run(d.String(), func(t *testing.T) {
			ad, err := r.Adapt(s, d)
			if err != nil {
				t.Fatal(err)
			}
			tree, err := parseTree(ad)
			if err != nil {
				t.Fatal(err)
			}
			refs := map[string]string{}
			_, _ = walk(tree, "", func(o *object, ptr string) (any, error) {
				if v, ok := o.get("$ref"); ok && !strings.Contains(v.(string), "JSONValue") {
					refs[ptr] = v.(string)
				}
				return o, nil
			})
			for ptr, ref := range want {
				got, ok := refs[ptr]
				if !ok { // OpenAI wraps a ref that is optional
					got = refs[ptr+"/anyOf/0"]
				}
				if got != ref {
					t.Errorf("the ref at %s is %q, want %q\nin %s", ptr, got, ref, ad)
				}
			}
			c, err := r.Compile(ad)
			if err != nil {
				t.Fatalf("the schema sent does not compile: %v\n%s", err, ad)
			}
			if d == Full { // the strict dialects close and null what they change
				if err := c.Validate(json.RawMessage(`{"n":{"label":"abcd"}}`)); err == nil {
					t.Errorf("a label over maxLength passes %s", ad)
				}
			}
		})
	}
}
