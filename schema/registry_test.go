package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistryAdd(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reg     string
		schema  string
		wantErr error
	}{
		{"ok", "Tool.issueRefund", `{"type":"object"}`, nil},
		{"boolean schema", "B", `true`, nil},
		{"ref to a name registered later", "A", `{"$ref":"Later"}`, nil},
		{"empty name", "", `{}`, ErrInvalidName},
		{"name with space", "a b", `{}`, ErrInvalidName},
		{"name with hash", "a#b", `{}`, ErrInvalidName},
		{"bad json", "A", `{"type":`, ErrInvalidJSON},
		{"not a schema", "A", `[1]`, ErrInvalidSchema},
		{"wrong keyword type", "A", `{"type":5}`, ErrInvalidSchema},
		{"bad local ref", "A", `{"$ref":"#/$defs/missing"}`, ErrInvalidSchema},
		{"bad pattern", "A", `{"pattern":"("}`, ErrInvalidSchema},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			err := r.Add(tt.reg, raw(tt.schema))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Add(%q, %s) = %v, want %v", tt.reg, tt.schema, err, tt.wantErr)
			}
		})
	}
}

// A schema that is not valid JSON Schema is reported where it is wrong,
// one failure a line, as a value that does not meet a schema is, rather
// than as the library's walk through every keyword of the metaschema.
func TestCompileInvalidSchemaSaysWhere(t *testing.T) {
	for _, tt := range []struct {
		schema, want string
	}{
		{`{"properties":{"a":{"minimum":"x"}},"required":"a"}`,
			"schema: invalid schema: at /properties/a/minimum: expected number, got string\nat /required: expected array, got string"},
		{`{"type":"strng"}`, `at /type: expected one of "array", "boolean", "integer", "null", "number", "object", "string", got "strng"`},
	} {
		_, err := Compile(raw(tt.schema))
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s) = %v, want ErrInvalidSchema saying %q", tt.schema, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "metaschema") {
			t.Errorf("Compile(%s) = %v: the library's text", tt.schema, err)
		}
	}
}

func TestRegistryDuplicate(t *testing.T) {
	r := NewRegistry()
	r.Register("A", raw(`{}`))
	if err := r.Add("A", raw(`{}`)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Add = %v, want ErrDuplicate", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Register of a duplicate did not panic")
		}
	}()
	r.Register("A", raw(`{}`))
}

func TestRegistryLookup(t *testing.T) {
	r := NewRegistry()
	r.Register("B", raw(`{"type": "string"}`))
	r.Register("A", raw(`{}`))
	got, err := r.Lookup("B")
	if err != nil || string(got) != `{"type": "string"}` {
		t.Fatalf("Lookup(B) = %s, %v", got, err)
	}
	if _, err := r.Lookup("C"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup(C) = %v, want ErrNotFound", err)
	}
	if _, err := r.Schema("C"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Schema(C) = %v, want ErrNotFound", err)
	}
	if diff := cmp.Diff(r.Names(), []string{"A", "B"}); diff != "" {
		t.Fatalf("Names (-got +want):\n%s", diff)
	}
}

func TestRefs(t *testing.T) {
	r := NewRegistry()
	r.Register("MetaSchema", raw(`{"type":"object","properties":{"version":{"$ref":"#/$defs/version"}},
		"required":["version"],"$defs":{"version":{"type":"string","pattern":"^[0-9]+\\.[0-9]+\\.[0-9]+$"}}}`))
	r.Register("Game", raw(`{"type":"object","properties":{"score":{"type":"integer"},"next":{"$ref":"Game"}}}`))
	for _, tt := range []struct {
		name, schema, value string
		valid               bool
	}{
		{"bare name", `{"$ref":"MetaSchema"}`, `{"version":"1.2.3"}`, true},
		{"bare name, invalid", `{"$ref":"MetaSchema"}`, `{"version":"1.2"}`, false},
		{"name and pointer", `{"$ref":"MetaSchema#/$defs/version"}`, `"1.2.3"`, true},
		{"name and pointer, invalid", `{"$ref":"MetaSchema#/$defs/version"}`, `"v1"`, false},
		{"local pointer", `{"$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":1}`, true},
		{"local pointer, invalid", `{"$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`, `{"a":"1"}`, false},
		{"recursive name", `{"$ref":"Game"}`, `{"score":1,"next":{"score":2,"next":{"score":3}}}`, true},
		{"recursive name, invalid", `{"$ref":"Game"}`, `{"score":1,"next":{"score":"2"}}`, false},
		{"spec 016 meta", `{"type":"object","properties":{"meta":{"$ref":"MetaSchema"},"output":{"$ref":"Game"}}}`,
			`{"meta":{"version":"1.2.4"},"output":{"score":3}}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := r.Compile(raw(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.Validate(raw(tt.value))
			if (err == nil) != tt.valid {
				t.Fatalf("Validate(%s) = %v, want valid %v", tt.value, err, tt.valid)
			}
		})
	}
}

func TestUnknownRef(t *testing.T) {
	r := NewRegistry()
	r.Register("Uses", raw(`{"properties":{"x":{"$ref":"Missing"}}}`))
	for _, tt := range []struct {
		name    string
		compile func() error
		want    string
	}{
		{"anonymous", func() error {
			_, err := r.Compile(raw(`{"properties":{"meta":{"$ref":"MetaSchema"}}}`))
			return err
		}, `schema: unknown ref "MetaSchema" at /properties/meta/$ref`},
		{"inside a named schema", func() error {
			_, err := r.Schema("Uses")
			return err
		}, `compile "Uses": schema: unknown ref "Missing" at /properties/x/$ref in "Uses"`},
		{"package Compile", func() error {
			_, err := Compile(raw(`{"$ref":"Anything"}`))
			return err
		}, `schema: unknown ref "Anything" at /$ref`},
		{"adapt", func() error {
			_, err := r.Adapt(raw(`{"type":"object","properties":{"x":{"$ref":"Nope#/a"}}}`), OpenAI)
			return err
		}, `schema: unknown ref "Nope#/a" at /properties/x/$ref`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.compile()
			if !errors.Is(err, ErrUnknownRef) {
				t.Fatalf("err = %v, want ErrUnknownRef", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("text\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNullable(t *testing.T) {
	for _, tt := range []struct {
		name, schema string
		valid        []string
		invalid      []string
	}{
		{"type", `{"type":"object","nullable":true,"properties":{"a":{"type":"string"}}}`,
			[]string{`null`, `{"a":"x"}`}, []string{`{"a":1}`, `1`}},
		{"type list", `{"type":["string","integer"],"nullable":true}`, []string{`null`, `"x"`, `1`}, []string{`1.5`}},
		{"enum", `{"type":"string","enum":["a","b"],"nullable":true}`, []string{`null`, `"a"`}, []string{`"c"`}},
		{"const", `{"const":"a","nullable":true}`, []string{`null`, `"a"`}, []string{`"b"`}},
		{"ref", `{"$defs":{"n":{"type":"number"}},"$ref":"#/$defs/n","nullable":true,"description":"d"}`,
			[]string{`null`, `1`}, []string{`"x"`}},
		{"false keeps null out", `{"type":"string","nullable":false}`, []string{`"x"`}, []string{`null`}},
		{"spec 012 output", `{"type":"object","properties":{"calls":{"type":"array"},"output":{"type":"object","nullable":true,
			"properties":{"confirmationId":{"type":"string"},"message":{"type":"string"}}}}}`,
			[]string{`{"calls":[],"output":null}`, `{"output":{"message":"done"}}`}, []string{`{"output":"done"}`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(raw(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tt.valid {
				if err := s.Validate(raw(v)); err != nil {
					t.Errorf("Validate(%s) = %v, want nil", v, err)
				}
			}
			for _, v := range tt.invalid {
				if err := s.Validate(raw(v)); err == nil {
					t.Errorf("Validate(%s) = nil, want an error", v)
				}
			}
		})
	}
}

func TestCompileCache(t *testing.T) {
	r := NewRegistry()
	a, err := r.Compile(raw(`{"type":"string"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Compile(raw(`{"type":"string"}`))
	if a != b {
		t.Error("compiling the same bytes twice gave two schemas")
	}
	r.Register("N", raw(`{"type":"string"}`))
	c, _ := r.Schema("N")
	d, _ := r.Schema("N")
	if c != d {
		t.Error("Schema(N) twice gave two schemas")
	}
}

// TestRegistryConcurrent runs registrations, compilations and validations at once; run
// it with -race.
func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	r.Register("Base", raw(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				name := fmt.Sprintf("S%d_%d", g, i)
				r.Register(name, raw(`{"type":"object","properties":{"base":{"$ref":"Base"}}}`))
				s, err := r.Schema(name)
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Validate(raw(`{"base":{"n":1}}`)); err != nil {
					t.Error(err)
				}
				if err := s.Validate(raw(`{"base":{"n":"1"}}`)); err == nil {
					t.Error("invalid value accepted")
				}
				c, err := r.Compile(raw(fmt.Sprintf(`{"$ref":"S%d_0"}`, g)))
				if err != nil {
					t.Error(err)
					return
				}
				_ = c.Validate(raw(`{}`))
				_ = r.Names()
				if _, err := r.Adapt(raw(`{"type":"object","properties":{"b":{"$ref":"Base"}}}`), OpenAI); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := len(r.Names()); got != 8*20+1 {
		t.Errorf("%d names, want %d", got, 8*20+1)
	}
}

func TestRegistryZeroValue(t *testing.T) {
	var r Registry
	r.Register("A", raw(`{"type":"string"}`))
	s, err := r.Compile(raw(`{"$ref":"A"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Validate(raw(`1`)) == nil {
		t.Error("zero-value registry: ref not followed")
	}
}

func TestNamesSchemas(t *testing.T) {
	r := NewRegistry()
	r.Register("City", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`))
	for s, want := range map[string]bool{
		`{"type":"object"}`:                                     false,
		`{"$ref":"#/$defs/a","$defs":{"a":{}}}`:                 false,
		`{"properties":{"c":{"$ref":"City"}}}`:                  true,
		`{"properties":{"c":{"$ref":"City#/properties/name"}}}`: true,
		`{"enum":["$ref"]}`:                                     false,
	} {
		c, err := r.Compile(json.RawMessage(s))
		if err != nil {
			t.Fatalf("Compile(%s): %v", s, err)
		}
		if got := c.NamesSchemas(); got != want {
			t.Errorf("NamesSchemas(%s) = %v, want %v", s, got, want)
		}
	}
}
