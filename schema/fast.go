package schema

import (
	"encoding/json"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the fast path of validation. The library builds a detailed error for every
// alternative it tries, so a valid call checked against the anyOf of ten tools costs it
// far more than the check itself. The fast path evaluates the same decoded value against
// a plain compiled form of the schema, and answers yes, no or unsure. Only yes is used:
// on no or unsure the library decides, and produces the error.
//
// Every node answers in three values, and every applicator combines them as logic with
// "unknown" would: an alternative the fast path cannot decide (a keyword it does not
// implement, such as format; a ref cycle; a number too large to compare) leaves anyOf,
// oneOf, not and if unsure unless the answer is fixed without it. Values are compared as
// the library compares them: numbers by exact value (1.0 and 1e0 are the integer 1),
// strings after decoding, lengths in code points. FuzzFastPath and the JSON Schema test
// suite (TestFastPathSuite) check that the two never disagree.

// answer is what the fast path knows about a value: it conforms (yes), it does not (no),
// or only the library can tell (unsure).
type answer uint8

const (
	unsure answer = iota
	yes
	no
)

// and combines the answers for two conditions that must both hold.
func and(a, b answer) answer {
	switch {
	case a == no || b == no:
		return no
	case a == unsure || b == unsure:
		return unsure
	}
	return yes
}

// or combines the answers for two conditions of which one must hold.
func or(a, b answer) answer { return negate(and(negate(a), negate(b))) }

// is answers yes for true.
func is(b bool) answer {
	if b {
		return yes
	}
	return no
}

func negate(a answer) answer {
	switch a {
	case yes:
		return no
	case no:
		return yes
	}
	return unsure
}

// JSON types, as bits; tInteger only appears in a schema's type mask.
const (
	tNull uint8 = 1 << iota
	tBool
	tNumber
	tString
	tArray
	tObject
	tInteger
)

// fastNode is one compiled schema of the fast path. A count of -1 is no constraint; a nil
// node or number, no keyword.
type fastNode struct {
	never  bool // the false schema
	opaque bool // has a keyword the fast path does not decide: never yes, maybe no

	types uint8
	enums [][]any // each enum, and const as a one-value enum: the value equals one of each

	minLength, maxLength int
	pattern              *regexp.Regexp

	minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf *big.Rat

	minProperties, maxProperties int
	required                     []string
	dependentRequired            map[string][]string
	properties                   map[string]*fastNode
	patternProperties            []patternNode
	additionalProperties         *fastNode
	propertyNames                *fastNode
	dependentSchemas             map[string]*fastNode

	minItems, maxItems       int
	uniqueItems              bool
	prefixItems              []*fastNode
	items                    *fastNode
	contains                 *fastNode
	minContains, maxContains int

	ref                 *fastNode
	allOf, anyOf, oneOf []*fastNode
	not                 *fastNode
	cond, then, els     *fastNode // if, then, else
}

type patternNode struct {
	re   *regexp.Regexp
	node *fastNode
}

// buildFast compiles the fast path for the resource top, or returns nil when the
// resources use a keyword that changes how refs resolve or which draft applies.
func buildFast(resources map[string]any, top string) *fastNode {
	for _, doc := range resources {
		if !plainRefs(doc, true) {
			return nil
		}
	}
	b := &fastBuilder{resources: resources, nodes: map[string]*fastNode{}}
	return b.at(top, "")
}

// plainRefs reports whether v, part of a schema document (root at its top), leaves refs
// to resolve as JSON pointers in their document under draft 2020-12: no $id below a
// root, no anchors, dynamic or recursive refs, vocabularies, or other draft. It looks at
// every object, even inside enum values: a false alarm only costs the fast path.
func plainRefs(v any, root bool) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if !plainRefs(e, false) {
				return false
			}
		}
	case *object:
		for _, m := range v.members {
			switch m.key {
			case "$id":
				if !root {
					return false
				}
			case "$schema":
				if m.val != "https://json-schema.org/draft/2020-12/schema" {
					return false
				}
			case "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$vocabulary":
				return false
			}
			if !plainRefs(m.val, false) {
				return false
			}
		}
	}
	return true
}

type fastBuilder struct {
	resources map[string]any
	nodes     map[string]*fastNode // by resource URL and pointer
}

// at returns the node of the schema at the JSON pointer ptr in the resource u.
func (b *fastBuilder) at(u, ptr string) *fastNode {
	key := u + "#" + ptr
	if n, ok := b.nodes[key]; ok {
		return n
	}
	n := &fastNode{minLength: -1, maxLength: -1, minProperties: -1, maxProperties: -1,
		minItems: -1, maxItems: -1, minContains: -1, maxContains: -1}
	b.nodes[key] = n // before filling: a ref cycle comes back to n
	v, _ := lookupPointer(b.resources[u], ptr)
	switch v := v.(type) {
	case bool:
		n.never = !v
	case *object:
		b.fill(n, v, u, ptr)
	default:
		n.opaque = true // not found, or not a schema: the library reports it
	}
	return n
}

// fastIgnored are the keywords that never change whether a value is valid: annotations,
// containers of subschemas, content keywords (asserted only when a compiler asks), and
// $id and $schema once plainRefs has vetted them.
var fastIgnored = []string{"$id", "$schema", "$defs", "$comment", "definitions", "title",
	"description", "default", "examples", "deprecated", "readOnly", "writeOnly",
	"contentEncoding", "contentMediaType", "contentSchema"}

func (b *fastBuilder) fill(n *fastNode, o *object, u, ptr string) {
	sub := func(key string) *fastNode { return b.at(u, ptr+"/"+escapeToken(key)) }
	subList := func(key string, v any) []*fastNode {
		list, ok := v.([]any)
		if !ok {
			n.opaque = true
			return nil
		}
		nodes := make([]*fastNode, len(list))
		for i := range list {
			nodes[i] = b.at(u, ptr+"/"+escapeToken(key)+"/"+strconv.Itoa(i))
		}
		return nodes
	}
	subMap := func(key string, v any) map[string]*fastNode {
		mo, ok := v.(*object)
		if !ok {
			n.opaque = true
			return nil
		}
		nodes := map[string]*fastNode{}
		for _, m := range mo.members {
			nodes[m.key] = b.at(u, ptr+"/"+escapeToken(key)+"/"+escapeToken(m.key))
		}
		return nodes
	}
	count := func(v any) int {
		r, ok := exactValue(v)
		if !ok || !r.IsInt() || r.Sign() < 0 || r.Num().BitLen() > 31 {
			n.opaque = true
			return -1
		}
		return int(r.Num().Int64())
	}
	number := func(v any) *big.Rat {
		r, ok := exactValue(v)
		if !ok {
			n.opaque = true
			return nil
		}
		return r
	}
	for _, m := range o.members {
		switch m.key {
		case "type":
			n.types = typeMask(m.val)
			if n.types == 0 {
				n.opaque = true
			}
		case "const":
			n.enums = append(n.enums, []any{plain(m.val)})
		case "enum":
			if list, ok := plain(m.val).([]any); ok {
				n.enums = append(n.enums, list)
			} else {
				n.opaque = true
			}
		case "minLength":
			n.minLength = count(m.val)
		case "maxLength":
			n.maxLength = count(m.val)
		case "pattern":
			n.pattern = b.regexp(n, m.val)
		case "minimum":
			n.minimum = number(m.val)
		case "maximum":
			n.maximum = number(m.val)
		case "exclusiveMinimum":
			n.exclusiveMinimum = number(m.val)
		case "exclusiveMaximum":
			n.exclusiveMaximum = number(m.val)
		case "multipleOf":
			if n.multipleOf = number(m.val); n.multipleOf != nil && n.multipleOf.Sign() <= 0 {
				n.opaque, n.multipleOf = true, nil
			}
		case "minProperties":
			n.minProperties = count(m.val)
		case "maxProperties":
			n.maxProperties = count(m.val)
		case "required":
			n.required = b.strings(n, m.val)
		case "dependentRequired":
			mo, ok := m.val.(*object)
			if !ok {
				n.opaque = true
				continue
			}
			n.dependentRequired = map[string][]string{}
			for _, dm := range mo.members {
				n.dependentRequired[dm.key] = b.strings(n, dm.val)
			}
		case "properties":
			n.properties = subMap(m.key, m.val)
		case "patternProperties":
			for name, node := range subMap(m.key, m.val) {
				if re := b.regexp(n, name); re != nil {
					n.patternProperties = append(n.patternProperties, patternNode{re, node})
				}
			}
		case "additionalProperties":
			n.additionalProperties = sub(m.key)
		case "propertyNames":
			n.propertyNames = sub(m.key)
		case "dependentSchemas":
			n.dependentSchemas = subMap(m.key, m.val)
		case "minItems":
			n.minItems = count(m.val)
		case "maxItems":
			n.maxItems = count(m.val)
		case "uniqueItems":
			u, ok := m.val.(bool)
			n.uniqueItems = u
			n.opaque = n.opaque || !ok
		case "prefixItems":
			n.prefixItems = subList(m.key, m.val)
		case "items":
			n.items = sub(m.key)
		case "contains":
			n.contains = sub(m.key)
		case "minContains":
			n.minContains = count(m.val)
		case "maxContains":
			n.maxContains = count(m.val)
		case "allOf":
			n.allOf = subList(m.key, m.val)
		case "anyOf":
			n.anyOf = subList(m.key, m.val)
		case "oneOf":
			n.oneOf = subList(m.key, m.val)
		case "not":
			n.not = sub(m.key)
		case "if":
			n.cond = sub(m.key)
		case "then":
			n.then = sub(m.key)
		case "else":
			n.els = sub(m.key)
		case "$ref":
			n.ref = b.ref(n, u, m.val)
		default:
			if slices.Contains(fastIgnored, m.key) {
				continue
			}
			if strings.HasPrefix(m.key, "$") || isLibraryKeyword(m.key) {
				n.opaque = true // format, unevaluated*, draft-07 spellings and the like
			}
			// Any other key is an annotation in 2020-12.
		}
	}
}

// isLibraryKeyword reports the keywords the library may assert that the fast path does
// not decide.
func isLibraryKeyword(k string) bool {
	switch k {
	case "format", "unevaluatedItems", "unevaluatedProperties", "dependencies", "additionalItems":
		return true
	}
	return false
}

// ref resolves a $ref: "#<pointer>" in the same resource, or "<resource URL>#<pointer>"
// as resolveNames writes refs to registered names.
func (b *fastBuilder) ref(n *fastNode, u string, v any) *fastNode {
	ref, ok := v.(string)
	if !ok {
		n.opaque = true
		return nil
	}
	target, frag, _ := strings.Cut(ref, "#")
	if target == "" {
		target = u
	}
	frag, err := url.PathUnescape(frag)
	if _, known := b.resources[target]; !known || err != nil || frag != "" && frag[0] != '/' {
		n.opaque = true
		return nil
	}
	return b.at(target, frag)
}

func (b *fastBuilder) regexp(n *fastNode, v any) *regexp.Regexp {
	s, _ := v.(string)
	re, err := regexp.Compile(s) // the library's default engine
	if _, ok := v.(string); !ok || err != nil {
		n.opaque = true
		return nil
	}
	return re
}

func (b *fastBuilder) strings(n *fastNode, v any) []string {
	list, _ := v.([]any)
	out := []string{}
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			n.opaque = true
		}
		out = append(out, s)
	}
	if list == nil {
		n.opaque = true
	}
	return out
}

// typeMask returns the mask of a "type" value, or 0 if it names an unknown type.
func typeMask(v any) uint8 {
	names, ok := v.([]any)
	if !ok {
		names = []any{v}
	}
	var m uint8
	for _, t := range names {
		switch t {
		case "null":
			m |= tNull
		case "boolean":
			m |= tBool
		case "number":
			m |= tNumber
		case "integer":
			m |= tInteger
		case "string":
			m |= tString
		case "array":
			m |= tArray
		case "object":
			m |= tObject
		default:
			return 0
		}
	}
	return m
}

// exactValue returns the exact value of a JSON number, as the library computes it. Numbers
// whose exponent is too large for that are not numbers here.
func exactValue(v any) (*big.Rat, bool) {
	num, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(string(num))
}

// typeOf returns the JSON type of a value decoded by decode, or 0 for anything else.
func typeOf(v any) uint8 {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case json.Number:
		return tNumber
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return 0
}

// accepts reports whether v, a value decoded by decode, certainly conforms.
func (n *fastNode) accepts(v any) bool {
	return n.eval(v, make([]*fastNode, 0, 32)) == yes
}

// eval answers whether v conforms to n. path holds the nodes entered for v itself,
// through $ref and the in-place applicators: entering one again is a cycle, which the
// library reports. A child value starts a new path after the end of path, reusing the
// slice's spare capacity.
func (n *fastNode) eval(v any, path []*fastNode) answer {
	if n.never {
		return no
	}
	t := typeOf(v)
	if t == 0 || slices.Contains(path, n) {
		return unsure
	}
	path = append(path, n)
	a := n.evalType(v, t)
	if n.opaque {
		a = and(a, unsure)
	}
	if a != no {
		a = and(a, n.evalEnums(v))
	}
	if a != no {
		a = and(a, n.evalValue(v, path[len(path):]))
	}
	if a != no {
		a = and(a, n.evalInPlace(v, path))
	}
	return a
}

func (n *fastNode) evalType(v any, t uint8) answer {
	switch {
	case n.types == 0 || n.types&t != 0:
		return yes
	case t == tNumber && n.types&tInteger != 0:
		return isInteger(v.(json.Number))
	}
	return no
}

// isInteger answers whether num has no fraction: 1.0, 1e0 and 100e-2 are integers.
func isInteger(num json.Number) answer {
	if !strings.ContainsAny(string(num), ".eE") {
		return yes
	}
	r, ok := exactValue(num)
	if !ok {
		return unsure
	}
	return is(r.IsInt())
}

func (n *fastNode) evalEnums(v any) answer {
	a := yes
	for _, list := range n.enums {
		found := no
		for _, e := range list {
			if found = or(found, equal(v, e)); found == yes {
				break
			}
		}
		if a = and(a, found); a == no {
			return no
		}
	}
	return a
}

// equal answers whether two decoded values are equal as JSON Schema compares them:
// numbers by value, objects whatever their order.
func equal(x, y any) answer {
	tx, ty := typeOf(x), typeOf(y)
	switch {
	case tx == 0 || ty == 0:
		return unsure
	case tx != ty:
		return no
	}
	switch x := x.(type) {
	case bool:
		return is(x == y.(bool))
	case string:
		return is(x == y.(string))
	case json.Number:
		rx, okx := exactValue(x)
		ry, oky := exactValue(y)
		if !okx || !oky {
			return unsure
		}
		return is(rx.Cmp(ry) == 0)
	case []any:
		y := y.([]any)
		if len(x) != len(y) {
			return no
		}
		a := yes
		for i := range x {
			if a = and(a, equal(x[i], y[i])); a == no {
				return no
			}
		}
		return a
	case map[string]any:
		y := y.(map[string]any)
		if len(x) != len(y) {
			return no
		}
		a := yes
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return no
			}
			if a = and(a, equal(xv, yv)); a == no {
				return no
			}
		}
		return a
	}
	return yes // both null
}

// evalValue checks the keywords for v's own type. Its members or items are evaluated
// with child as their path.
func (n *fastNode) evalValue(v any, child []*fastNode) answer {
	switch v := v.(type) {
	case string:
		return n.evalString(v)
	case json.Number:
		return n.evalNumber(v)
	case []any:
		return n.evalArray(v, child)
	case map[string]any:
		return n.evalObject(v, child)
	}
	return yes
}

func (n *fastNode) evalString(s string) answer {
	if n.minLength >= 0 || n.maxLength >= 0 {
		l := utf8.RuneCountInString(s) // code points, as the library counts
		if l < n.minLength || n.maxLength >= 0 && l > n.maxLength {
			return no
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return no
	}
	return yes
}

func (n *fastNode) evalNumber(num json.Number) answer {
	if n.minimum == nil && n.maximum == nil && n.exclusiveMinimum == nil &&
		n.exclusiveMaximum == nil && n.multipleOf == nil {
		return yes
	}
	r, ok := exactValue(num)
	if !ok {
		return unsure
	}
	switch {
	case n.minimum != nil && r.Cmp(n.minimum) < 0,
		n.maximum != nil && r.Cmp(n.maximum) > 0,
		n.exclusiveMinimum != nil && r.Cmp(n.exclusiveMinimum) <= 0,
		n.exclusiveMaximum != nil && r.Cmp(n.exclusiveMaximum) >= 0,
		n.multipleOf != nil && !new(big.Rat).Quo(r, n.multipleOf).IsInt():
		return no
	}
	return yes
}

// maxUniqueItems is the longest array whose uniqueItems the fast path checks, pair by pair.
const maxUniqueItems = 100

func (n *fastNode) evalArray(arr []any, child []*fastNode) answer {
	if len(arr) < n.minItems || n.maxItems >= 0 && len(arr) > n.maxItems {
		return no
	}
	a := yes
	switch {
	case n.uniqueItems && len(arr) > maxUniqueItems:
		a = unsure
	case n.uniqueItems:
		for i := range arr {
			for j := range i {
				if a = and(a, negate(equal(arr[i], arr[j]))); a == no {
					return no
				}
			}
		}
	}
	for i, e := range arr {
		s := n.items
		if i < len(n.prefixItems) {
			s = n.prefixItems[i]
		}
		if s == nil {
			continue
		}
		if a = and(a, s.eval(e, child)); a == no {
			return no
		}
	}
	if n.contains != nil {
		matched, maybe := 0, 0
		for _, e := range arr {
			switch n.contains.eval(e, child) {
			case yes:
				matched++
			case unsure:
				maybe++
			}
		}
		least := n.minContains
		if least < 0 {
			least = 1
		}
		a = and(a, inRange(matched, matched+maybe, least, n.maxContains))
	}
	return a
}

func (n *fastNode) evalObject(obj map[string]any, child []*fastNode) answer {
	if len(obj) < n.minProperties || n.maxProperties >= 0 && len(obj) > n.maxProperties {
		return no
	}
	if !hasAll(obj, n.required) {
		return no
	}
	for k, deps := range n.dependentRequired {
		if _, ok := obj[k]; ok && !hasAll(obj, deps) {
			return no
		}
	}
	a := yes
	member := func(s *fastNode, v any) bool { // reports a definite no
		a = and(a, s.eval(v, child))
		return a == no
	}
	for k, v := range obj {
		declared := false
		if s, ok := n.properties[k]; ok {
			declared = true
			if member(s, v) {
				return no
			}
		}
		for _, p := range n.patternProperties {
			if p.re.MatchString(k) {
				declared = true
				if member(p.node, v) {
					return no
				}
			}
		}
		if !declared && n.additionalProperties != nil && member(n.additionalProperties, v) {
			return no
		}
		if n.propertyNames != nil && member(n.propertyNames, k) {
			return no
		}
	}
	return a
}

func hasAll(obj map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return false
		}
	}
	return true
}

// evalInPlace checks the applicators that apply to v itself: $ref, allOf, anyOf,
// oneOf, not, if/then/else and dependentSchemas.
func (n *fastNode) evalInPlace(v any, path []*fastNode) answer {
	a := yes
	must := func(b answer) bool { // reports a definite no
		a = and(a, b)
		return a == no
	}
	if n.ref != nil && must(n.ref.eval(v, path)) {
		return no
	}
	for _, s := range n.allOf {
		if must(s.eval(v, path)) {
			return no
		}
	}
	if obj, ok := v.(map[string]any); ok {
		for k, s := range n.dependentSchemas {
			if _, ok := obj[k]; ok && must(s.eval(v, path)) {
				return no
			}
		}
	}
	if len(n.anyOf) > 0 {
		some := no
		for _, s := range n.anyOf {
			if some = or(some, s.eval(v, path)); some == yes {
				break
			}
		}
		if must(some) {
			return no
		}
	}
	if len(n.oneOf) > 0 {
		matched, maybe := 0, 0
		for _, s := range n.oneOf {
			switch s.eval(v, path) {
			case yes:
				matched++
			case unsure:
				maybe++
			}
		}
		if must(inRange(matched, matched+maybe, 1, 1)) {
			return no
		}
	}
	if n.not != nil && must(negate(n.not.eval(v, path))) {
		return no
	}
	if n.cond != nil {
		c := n.cond.eval(v, path)
		then, els := yes, yes
		if n.then != nil && c != no {
			then = n.then.eval(v, path)
		}
		if n.els != nil && c != yes {
			els = n.els.eval(v, path)
		}
		switch {
		case c == yes:
			must(then)
		case c == no:
			must(els)
		case then == els:
			must(then) // either way
		default:
			must(unsure)
		}
	}
	return a
}

// inRange answers whether a count known to lie in [lo, hi] lies in [least, most]; most
// -1 is no limit.
func inRange(lo, hi, least, most int) answer {
	switch {
	case hi < least, most >= 0 && lo > most:
		return no
	case lo < least, most >= 0 && hi > most:
		return unsure
	}
	return yes
}
