package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Sentinel errors. Callers branch on them with [errors.Is].
var (
	// ErrNotFound reports a lookup of a name that is not registered.
	ErrNotFound = errors.New("schema: not found")
	// ErrDuplicate reports a second registration of the same name.
	ErrDuplicate = errors.New("schema: duplicate name")
	// ErrInvalidName reports a name that cannot be registered (see [Registry.Add]).
	ErrInvalidName = errors.New("schema: invalid name")
	// ErrInvalidSchema reports a schema that is not valid JSON Schema 2020-12.
	ErrInvalidSchema = errors.New("schema: invalid schema")
	// ErrInvalidJSON reports an instance or schema that is not well-formed JSON.
	ErrInvalidJSON = errors.New("schema: invalid JSON")
	// ErrUnknownRef reports a $ref to a name that is not registered.
	ErrUnknownRef = errors.New("schema: unknown ref")
	// ErrInvalidRef reports a $ref that is malformed or points nowhere inside its schema.
	ErrInvalidRef = errors.New("schema: invalid ref")
	// ErrRecursive reports a recursive $ref that a [Dialect] would have to inline.
	ErrRecursive = errors.New("schema: recursive ref")
	// ErrUnsupported reports a schema that a [Dialect] cannot express without making
	// valid values impossible; send it unadapted, without strict mode, instead.
	ErrUnsupported = errors.New("schema: unsupported")
)

// ValidationError reports that a JSON value does not conform to a schema. Its Error text
// is compact, stable and written to be shown to an LLM so it can correct its answer, one
// failure a line:
//
//	at /calls/0/amount: expected number, got string
//	at /calls/1: missing required property "customerId"
//
// The error returned by validation is the root of a tree. When one thing is wrong, the
// root is that failure. When several independent things are wrong, the root has an empty
// InstancePath and KeywordPath, Message "N errors", and each failure in Causes.
type ValidationError struct {
	// InstancePath is the JSON pointer (RFC 6901) of the failing value in the instance;
	// "" is the whole instance.
	InstancePath string
	// KeywordPath is the JSON pointer of the failing keyword, followed through $refs
	// from the root of the schema: "/properties/calls/items/anyOf/2/properties/amount/type".
	KeywordPath string
	// Message says what is wrong, without the location: "expected number, got string".
	Message string
	// Causes are the failures that make up this one. For a root it is every independent
	// failure; for an anyOf or oneOf it is one entry per alternative (Message
	// "alternative i"), whose Causes say why that alternative does not match.
	Causes []*ValidationError
}

// Error returns the compact multi-line text described on [ValidationError]. Of the
// alternatives of an anyOf or oneOf it shows only the closest ones: an alternative is
// set aside when the value already has the wrong type for it, or differs from it in a
// const or enum property (a discriminator such as "_tool"). Causes keeps them all.
func (e *ValidationError) Error() string {
	var b strings.Builder
	e.write(&b, 0)
	return b.String()
}

func (e *ValidationError) write(b *strings.Builder, depth int) {
	if e.isRoot() {
		for i, c := range e.Causes {
			if i > 0 {
				b.WriteByte('\n')
			}
			c.write(b, depth)
		}
		return
	}
	line(b, depth, "at "+displayPath(e.InstancePath)+": "+e.Message)
	if len(e.Causes) == 0 {
		return
	}
	if !e.isAlternatives() {
		b.WriteByte(':')
		for _, c := range e.Causes {
			b.WriteByte('\n')
			c.write(b, depth+1)
		}
		return
	}
	kept := closest(e.InstancePath, e.Causes)
	if len(kept) == 1 && len(e.Causes) > 1 {
		b.WriteString("; closest is " + kept[0].Message + ":")
		for _, c := range kept[0].Causes {
			b.WriteByte('\n')
			c.write(b, depth+1)
		}
		return
	}
	b.WriteByte(':')
	for _, alt := range kept {
		b.WriteByte('\n')
		line(b, depth+1, alt.Message+":")
		for _, c := range alt.Causes {
			b.WriteByte('\n')
			c.write(b, depth+2)
		}
	}
}

func line(b *strings.Builder, depth int, s string) {
	for range depth {
		b.WriteString("  ")
	}
	b.WriteString(s)
}

func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func (e *ValidationError) isRoot() bool {
	return e.InstancePath == "" && e.KeywordPath == "" && len(e.Causes) > 1
}

func (e *ValidationError) isAlternatives() bool {
	k := lastToken(e.KeywordPath)
	return k == "anyOf" || k == "oneOf"
}

func lastToken(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// closest drops the alternatives that fail on the value's type or on a discriminator: a
// type, const or enum failure at the alternative's own value, or a const failure at one
// of its direct properties (such as "_tool"). If that would drop them all, it keeps them all.
func closest(at string, alts []*ValidationError) []*ValidationError {
	var kept []*ValidationError
	for _, alt := range alts {
		shallow := false
		for _, c := range alt.Causes {
			switch lastToken(c.KeywordPath) {
			case "type":
				shallow = shallow || c.InstancePath == at
			case "enum":
				shallow = shallow || c.InstancePath == at
			case "const":
				rest, ok := strings.CutPrefix(c.InstancePath, at)
				shallow = shallow || ok && strings.Count(rest, "/") <= 1
			}
		}
		if !shallow {
			kept = append(kept, alt)
		}
	}
	if len(kept) == 0 {
		return alts
	}
	return kept
}

// fromLibrary converts the validator library's error tree into ours.
func fromLibrary(e *jsonschema.ValidationError) *ValidationError {
	causes := convert(e, e.SchemaURL, "")
	if len(causes) == 1 {
		return causes[0]
	}
	return &ValidationError{Message: fmt.Sprintf("%d errors", len(causes)), Causes: causes}
}

// convert follows the library's keywordLocation algorithm (output.go): the keyword path
// grows by the part of each error's schema URL below its parent's, and by "$ref" at each
// reference; references, groups and allOf are transparent.
func convert(e *jsonschema.ValidationError, parentURL, kwLoc string) []*ValidationError {
	if parentURL != "" && strings.HasPrefix(e.SchemaURL, parentURL) {
		kwLoc += decodeFragment(e.SchemaURL[len(parentURL):])
	}
	childURL := e.SchemaURL
	switch k := e.ErrorKind.(type) {
	case *kind.Reference:
		return convertAll(e.Causes, k.URL, kwLoc+"/"+k.Keyword)
	case *kind.Schema, *kind.Group:
		return convertAll(e.Causes, childURL, kwLoc)
	case *kind.AllOf:
		return convertAll(e.Causes, childURL, kwLoc)
	}
	v := &ValidationError{
		InstancePath: pointer(e.InstanceLocation),
		KeywordPath:  kwLoc + pointer(e.ErrorKind.KeywordPath()),
		Message:      describe(e.ErrorKind),
	}
	switch k := e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if o, ok := k.(*kind.OneOf); !ok || len(o.Subschemas) == 0 {
			v.Message = fmt.Sprintf("matches none of the %d alternatives", len(e.Causes))
		}
		for i, c := range e.Causes {
			alt := &ValidationError{
				InstancePath: v.InstancePath,
				KeywordPath:  v.KeywordPath + "/" + strconv.Itoa(i),
				Message:      "alternative " + strconv.Itoa(i),
			}
			alt.Causes = convert(c, childURL, kwLoc)
			v.Causes = append(v.Causes, alt)
		}
	default:
		v.Causes = convertAll(e.Causes, childURL, kwLoc)
	}
	return v.single()
}

func (v *ValidationError) single() []*ValidationError { return []*ValidationError{v} }

// convertAll converts sibling errors and sorts them by instance path, then keyword path:
// the library collects them from map iterations, and the text must not change from run
// to run.
func convertAll(es []*jsonschema.ValidationError, parentURL, kwLoc string) []*ValidationError {
	var out []*ValidationError
	for _, c := range es {
		out = append(out, convert(c, parentURL, kwLoc)...)
	}
	slices.SortStableFunc(out, func(a, b *ValidationError) int {
		if c := strings.Compare(a.InstancePath, b.InstancePath); c != 0 {
			return c
		}
		return strings.Compare(a.KeywordPath, b.KeywordPath)
	})
	return out
}

func decodeFragment(s string) string {
	s = strings.TrimPrefix(s, "#")
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// describe words one failure. The wording is ours, not the library's, so that the text
// shown to the LLM and kept in logs stays the same across library upgrades.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return "expected " + strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.Const:
		return "expected " + display(k.Want) + ", got " + display(k.Got)
	case *kind.Enum:
		return "expected one of " + displayList(k.Want) + ", got " + display(k.Got)
	case *kind.Required:
		if len(k.Missing) == 1 {
			return "missing required property " + strconv.Quote(k.Missing[0])
		}
		return "missing required properties " + quoteList(k.Missing)
	case *kind.AdditionalProperties:
		if len(k.Properties) == 1 {
			return "property " + strconv.Quote(k.Properties[0]) + " is not allowed"
		}
		return "properties " + quoteList(slices.Sorted(slices.Values(k.Properties))) + " are not allowed"
	case *kind.DependentRequired:
		return "property " + strconv.Quote(k.Prop) + " requires " + quoteList(k.Missing)
	case *kind.Dependency:
		return "property " + strconv.Quote(k.Prop) + " requires " + quoteList(k.Missing)
	case *kind.MinLength:
		return fmt.Sprintf("expected at least %s, got %d", plural(k.Want, "character", "characters"), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("expected at most %s, got %d", plural(k.Want, "character", "characters"), k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("expected at least %s, got %d", plural(k.Want, "item", "items"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("expected at most %s, got %d", plural(k.Want, "item", "items"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("expected at least %s, got %d", plural(k.Want, "property", "properties"), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("expected at most %s, got %d", plural(k.Want, "property", "properties"), k.Got)
	case *kind.Minimum:
		return "expected a number >= " + rat(k.Want) + ", got " + rat(k.Got)
	case *kind.Maximum:
		return "expected a number <= " + rat(k.Want) + ", got " + rat(k.Got)
	case *kind.ExclusiveMinimum:
		return "expected a number > " + rat(k.Want) + ", got " + rat(k.Got)
	case *kind.ExclusiveMaximum:
		return "expected a number < " + rat(k.Want) + ", got " + rat(k.Got)
	case *kind.MultipleOf:
		return "expected a multiple of " + rat(k.Want) + ", got " + rat(k.Got)
	case *kind.Pattern:
		return display(k.Got) + " does not match pattern " + strconv.Quote(k.Want)
	case *kind.Format:
		return display(k.Got) + " is not a valid " + k.Want
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal, but items must be unique", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		return "no item matches the contains schema"
	case *kind.MinContains:
		return fmt.Sprintf("expected at least %d items matching the contains schema, got %d", k.Want, len(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf("expected at most %d items matching the contains schema, got %d", k.Want, len(k.Got))
	case *kind.PropertyNames:
		return "invalid property name " + strconv.Quote(k.Property)
	case *kind.AdditionalItems:
		return "too many items"
	case *kind.FalseSchema:
		return "no value is allowed here"
	case *kind.Not:
		return "must not match the schema in not"
	case *kind.AnyOf:
		return "matches none of the alternatives"
	case *kind.OneOf:
		if len(k.Subschemas) == 0 {
			return "matches none of the alternatives"
		}
		return fmt.Sprintf("matches alternatives %d and %d, but must match exactly one", k.Subschemas[0], k.Subschemas[1])
	}
	return "fails " + strings.Join(k.KeywordPath(), "/")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// display renders a JSON value for a message, cut short when long.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 60
	if len(b) > max {
		return string(b[:max-3]) + "..."
	}
	return string(b)
}

func displayList(vs []any) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = display(v)
	}
	return strings.Join(s, ", ")
}

func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// DecodeError reports JSON that conforms to the schema of a Go type but still cannot be
// decoded into it, for example a number too large for an int8 field.
type DecodeError struct {
	// InstancePath is the JSON pointer of the value that could not be decoded, when known.
	InstancePath string
	// Err is the error from encoding/json.
	Err error
}

// Error returns "schema: decode at <path>: <cause>".
func (e *DecodeError) Error() string {
	return "schema: decode at " + displayPath(e.InstancePath) + ": " + e.Err.Error()
}

// Unwrap returns the encoding/json error.
func (e *DecodeError) Unwrap() error { return e.Err }
