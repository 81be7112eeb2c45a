package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// ErrVersion reports a meta version that is not a valid next version.
var ErrVersion = errors.New("agent: invalid version bump")

// Version is a meta version (016): numbers separated by dots, optionally
// followed by branches, each a name and a counter: 1.2.3, 1.2.3.branch-A.1,
// 1.2.staging.1.
type Version struct {
	Parts []string // each a decimal number or a branch name
}

// ParseVersion parses a meta version.
func ParseVersion(s string) (Version, error) {
	if s == "" {
		return Version{}, fmt.Errorf("%w: empty version", ErrVersion)
	}
	parts := strings.Split(s, ".")
	for i, p := range parts {
		if p == "" {
			return Version{}, fmt.Errorf("%w: empty part %d in %q", ErrVersion, i, s)
		}
		if !isNumber(p) && (i == 0 || !isNumber(parts[min(i+1, len(parts)-1)]) || i == len(parts)-1) {
			return Version{}, fmt.Errorf("%w: %q: a branch name must follow a number and be followed by one", ErrVersion, s)
		}
	}
	return Version{Parts: parts}, nil
}

func (v Version) String() string { return strings.Join(v.Parts, ".") }

// Branch returns the innermost branch name, or "" on the main line.
func (v Version) Branch() string {
	for i := len(v.Parts) - 1; i >= 0; i-- {
		if !isNumber(v.Parts[i]) {
			return v.Parts[i]
		}
	}
	return ""
}

// CheckBump reports whether next is a valid successor of cur: a bump of
// the last run of numbers (1.2.3 → 1.2.4, 1.3.0, 2.0.0; 1.2.3.b.1 →
// 1.2.3.b.2), or the start of a branch (1.2.3 → 1.2.3.b.1). Anything else,
// including an equal version, is an error wrapping ErrVersion that says
// why.
//
// The error names the versions that would do, so that a model told of it
// picks one rather than guessing again.
func CheckBump(cur, next string) error {
	c, err := ParseVersion(cur)
	if err != nil {
		return err
	}
	if err := checkBump(c, cur, next); err != nil {
		return fmt.Errorf("%w; %s", err, successors(c))
	}
	return nil
}

// lastNumbers returns where the last run of numbers of v starts: the
// parts a bump may change.
func (v Version) lastNumbers() int {
	start := len(v.Parts)
	for start > 0 && isNumber(v.Parts[start-1]) {
		start--
	}
	return start
}

// successors says the versions that may follow c: each number of its
// last run bumped, or a branch.
func successors(c Version) string {
	return "the next version is " + strings.Join(bumps(c), ", ") + " or a branch " + c.String() + ".NAME.1"
}

// bumps returns the versions that follow c on its line: each number of
// its last run bumped, the numbers after it restarting at 0.
func bumps(c Version) []string {
	start := c.lastNumbers()
	var next []string
	for i := len(c.Parts) - 1; i >= start; i-- {
		parts := slices.Clone(c.Parts)
		n, _ := strconv.Atoi(parts[i])
		parts[i] = strconv.Itoa(n + 1)
		for j := i + 1; j < len(parts); j++ {
			parts[j] = "0"
		}
		next = append(next, strings.Join(parts, "."))
	}
	return next
}

// versionSchema is the schema of the version of the meta that follows
// one at version cur: a pattern that admits what CheckBump takes (a
// branch named by a number, which it refuses, or by digits with a
// leading 0, is left out), since a strict provider's model writes only
// what the schema allows, and one asked again for a version the schema
// would let it write wrong may write it wrong again. The generic schema
// serves a cur that is no version.
func versionSchema(cur string) string {
	c, err := ParseVersion(cur)
	if err != nil {
		return `{"type":"string","description":"The next version: one of the last numbers bumped, or a new branch VERSION.NAME.1, whose NAME is then added to branches."}`
	}
	next := bumps(c)
	alts := make([]string, len(next), len(next)+1)
	for i, v := range next {
		alts[i] = regexp.QuoteMeta(v)
	}
	// A branch name holds no dot, and something other than digits.
	alts = append(alts, regexp.QuoteMeta(cur)+`\.[^.]*[^.0-9][^.]*\.1`)
	s, _ := json.Marshal(map[string]string{
		"type":        "string",
		"description": "The next version: " + strings.Join(next, ", ") + ", or a new branch " + cur + ".NAME.1, whose NAME is then added to branches.",
		"pattern":     "^(" + strings.Join(alts, "|") + ")$",
	})
	return string(s)
}

// checkBump is CheckBump once cur is parsed as c.
func checkBump(c Version, cur, next string) error {
	n, err := ParseVersion(next)
	if err != nil {
		return err
	}
	if len(n.Parts) == len(c.Parts)+2 && slices.Equal(n.Parts[:len(c.Parts)], c.Parts) {
		name, counter := n.Parts[len(c.Parts)], n.Parts[len(c.Parts)+1]
		if isNumber(name) || counter != "1" {
			return fmt.Errorf("%w: %s → %s: a branch starts as %s.NAME.1", ErrVersion, cur, next, cur)
		}
		return nil
	}
	if len(n.Parts) != len(c.Parts) {
		return fmt.Errorf("%w: %s → %s: bump the last number or start a branch (%s.NAME.1)", ErrVersion, cur, next, cur)
	}
	// The last run of numbers is what may change.
	start := c.lastNumbers()
	if !slices.Equal(n.Parts[:start], c.Parts[:start]) {
		return fmt.Errorf("%w: %s → %s: only the numbers after %q may change", ErrVersion, cur, next, strings.Join(c.Parts[:start], "."))
	}
	for i := start; i < len(c.Parts); i++ {
		if !isNumber(n.Parts[i]) {
			return fmt.Errorf("%w: %s → %s: %q is not a number", ErrVersion, cur, next, n.Parts[i])
		}
		a, _ := strconv.Atoi(c.Parts[i])
		b, _ := strconv.Atoi(n.Parts[i])
		switch {
		case b == a:
			continue
		case b == a+1:
			for _, rest := range n.Parts[i+1:] {
				if rest != "0" {
					return fmt.Errorf("%w: %s → %s: the numbers after a bumped one restart at 0", ErrVersion, cur, next)
				}
			}
			return nil
		default:
			return fmt.Errorf("%w: %s → %s: a number goes up by one", ErrVersion, cur, next)
		}
	}
	return fmt.Errorf("%w: %s → %s: the version did not change", ErrVersion, cur, next)
}

func isNumber(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// metaFields are the fields of page 016's Meta object, in its order.
var metaFields = []struct{ name, schema string }{
	{"domain", `{"type":"string"}`},
	{"path", `{"type":"string"}`},
	{"version", ""}, // versionSchema
	{"branches", `{"type":"array","items":{"type":"string"}}`},
	{"createdAt", `{"type":"string"}`},
}

// metaNesting is how many levels of objects a field of the meta may
// hold for its schema to be offered: the solution and the meta enclose
// them, and OpenAI refuses objects that more than schema.OpenAIMaxDepth
// enclose.
const metaNesting = schema.OpenAIMaxDepth - 1

// metaSchemaSize bounds the bytes of the schemas metaSchema derives from
// the fields of the current meta: fewer than 800 properties and 16,384
// characters of names, well within the 5000 and 120,000 OpenAI allows a
// whole schema, which the tools and the output share.
const metaSchemaSize = 16 << 10

// metaSchema is the schema of the solution's meta, given the current
// meta cur. A strict provider lets the model write only the properties
// it names, so it names page 016's fields, branches among them, without
// which no branch can be started, and each other field of cur with a
// schema derived from its value (valueSchema), so that the new meta can
// carry them on. The version and the fields cur has are required: the
// new meta is the current one moved on, and Claude's strict mode counts
// every optional property against a small limit per request.
//
// partial reports that the schema leaves out parts of cur: what
// valueSchema cannot say, and the fields that would take the derived
// schemas over metaSchemaSize. keepMeta copies them into the solution's
// meta.
func metaSchema(cur json.RawMessage) (s json.RawMessage, partial bool) {
	var fields map[string]any
	_ = json.Unmarshal(cur, &fields)
	var b bytes.Buffer
	b.WriteString(`{"type":"object","description":"Metadata about the idea: its identity and version. Write the current one with its version bumped, or a branch started.","properties":{`)
	required := []string{}
	for i, f := range metaFields {
		if i > 0 {
			b.WriteByte(',')
		}
		schema := f.schema
		if f.name == "version" {
			v, _ := fields["version"].(string)
			schema = versionSchema(v)
		}
		fmt.Fprintf(&b, "%q:%s", f.name, schema)
		if _, ok := fields[f.name]; ok || f.name == "version" {
			required = append(required, f.name)
		}
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if slices.ContainsFunc(metaFields, func(f struct{ name, schema string }) bool { return f.name == k }) {
			continue
		}
		s, whole, ok := valueSchema(fields[k], metaNesting)
		if !ok || size+len(s) > metaSchemaSize {
			partial = true
			continue
		}
		partial = partial || !whole
		size += len(s)
		name, _ := json.Marshal(k)
		fmt.Fprintf(&b, ",%s:%s", name, s)
		required = append(required, k)
	}
	rb, _ := json.Marshal(required)
	b.WriteString(`},"required":`)
	b.Write(rb)
	b.WriteString("}")
	return b.Bytes(), partial
}

// valueSchema is the schema of the values shaped like v, a decoded JSON
// value: its type; for an object each of its keys with the schema of its
// value, all required; for a list the schema of its elements, an anyOf
// of those that differ. A strict provider's schema adapter closes each
// object. An empty list takes strings, as page 016's branches do.
//
// Some values no strict schema can say, or none that would let the
// model write anything else: a null alone (Gemini's responseSchema has
// no null type, only nullable ones), an empty object (which it cannot
// say, and the other strict modes let the model write only as {}), and
// objects enclosed by more than levels others. An object leaves out its
// keys holding them (whole is then false); it reports !ok when that
// leaves it no key, and a list when any element holds one, so that such
// a value is left out whole.
func valueSchema(v any, levels int) (s string, whole, ok bool) {
	switch v := v.(type) {
	case string:
		return `{"type":"string"}`, true, true
	case float64:
		return `{"type":"number"}`, true, true
	case bool:
		return `{"type":"boolean"}`, true, true
	case []any:
		var items []string
		seen := map[string]bool{}
		for _, e := range v {
			s, whole, ok := valueSchema(e, levels)
			if e == nil {
				s, whole, ok = `{"type":"null"}`, true, true // a nullable alternative beside the others
			}
			if !ok || !whole {
				return "", false, false
			}
			if !seen[s] {
				seen[s] = true
				items = append(items, s)
			}
		}
		switch {
		case len(items) == 0:
			return `{"type":"array","items":{"type":"string"}}`, true, true
		case len(items) == 1 && items[0] == `{"type":"null"}`:
			return "", false, false
		case len(items) == 1:
			return `{"type":"array","items":` + items[0] + `}`, true, true
		}
		return `{"type":"array","items":{"anyOf":[` + strings.Join(items, ",") + `]}}`, true, true
	case map[string]any:
		if levels == 0 {
			return "", false, false
		}
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		var required []string
		whole = true
		for _, k := range slices.Sorted(maps.Keys(v)) {
			s, w, ok := valueSchema(v[k], levels-1)
			whole = whole && w && ok
			if !ok {
				continue
			}
			if required != nil {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(k)
			b.Write(name)
			b.WriteByte(':')
			b.WriteString(s)
			required = append(required, k)
		}
		if required == nil {
			return "", false, false
		}
		rb, _ := json.Marshal(required)
		b.WriteString(`},"required":`)
		b.Write(rb)
		b.WriteByte('}')
		return b.String(), whole, true
	}
	return "", false, false // null
}

// keepMeta returns what gives the meta of a solution the parts of the
// current meta cur that it lacks, at any depth of objects, when the meta
// schema left some out (partial): the model was not offered them, and
// the new meta is the current one moved on. Every other part of cur is
// required by the schema, so only the parts left out can be missing. It
// returns nil when nothing was left out.
func keepMeta(cur json.RawMessage, partial bool) func(sol json.RawMessage) json.RawMessage {
	c, err := ojson.Parse(cur)
	if !partial || err != nil {
		return nil
	}
	return func(sol json.RawMessage) json.RawMessage {
		s, err := ojson.Parse(sol)
		if err != nil {
			return sol
		}
		meta, err := ojson.Parse(s.Get("meta"))
		if err != nil {
			return sol // no meta, or null: the schema decides whether there is one
		}
		keep(meta, c)
		s.Set("meta", meta.Bytes())
		return s.Bytes()
	}
}

// keep copies into o the keys of cur that o lacks, and does the same
// inside each object both have under one key. A value the model wrote
// stands.
func keep(o, cur *ojson.Object) {
	for i, k := range cur.Keys {
		if !o.Has(k) {
			o.Set(k, cur.Values[i])
			continue
		}
		innerCur, err := ojson.Parse(cur.Values[i])
		if err != nil {
			continue // not an object
		}
		inner, err := ojson.Parse(o.Get(k))
		if err != nil {
			continue
		}
		keep(inner, innerCur)
		o.Set(k, inner.Bytes())
	}
}

// metaOf reads the version and branches of a meta object.
func metaOf(raw json.RawMessage) (version string, branches []string) {
	var m struct {
		Version  string   `json:"version"`
		Branches []string `json:"branches"`
	}
	_ = json.Unmarshal(raw, &m)
	return m.Version, m.Branches
}

// checkMeta checks the meta of a solution against the current one: the
// version must be the next one, and a new branch must be listed.
func checkMeta(cur json.RawMessage) func(sol json.RawMessage) error {
	curVersion, _ := metaOf(cur)
	return func(sol json.RawMessage) error {
		var s struct {
			Meta json.RawMessage `json:"meta"`
		}
		if json.Unmarshal(sol, &s) != nil || s.Meta == nil || curVersion == "" {
			return nil // the schema decides whether meta is there at all
		}
		next, branches := metaOf(s.Meta)
		if err := CheckBump(curVersion, next); err != nil {
			return fmt.Errorf("meta.version: %w", err)
		}
		if nv, _ := ParseVersion(next); nv.Branch() != "" && !slices.Contains(branches, nv.Branch()) {
			return fmt.Errorf("meta.branches: the version is on branch %q, which is not listed", nv.Branch())
		}
		return nil
	}
}
