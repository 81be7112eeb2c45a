package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/augceo/agent/internal/flatjson"
)

// This file is the fast path of validation. The library validates a decoded value, and
// decoding plus validating a small tool call costs several microseconds. The fast path
// checks the raw bytes in one pass, with no allocation in the common case, for the
// keywords most tool and output schemas use.
//
// It only ever says "valid" when the value is valid: whenever it meets something it does
// not decide exactly (malformed JSON, an escaped string compared with a pattern, a number
// on the edge of a bound, a failure of any kind), it answers "not sure" and the library
// decides, and produces the error. A schema with a keyword it does not know gets no fast
// path at all. FuzzFastPath checks that the two agree.

const (
	tNull uint8 = 1 << iota
	tBool
	tObject
	tArray
	tNumber
	tString
	tInteger // a number with no fraction; implied by tNumber
)

// fastNode is one compiled schema of the fast path.
type fastNode struct {
	never bool  // the false schema
	types uint8 // 0: any type

	consts []constVal // enum, or const as a one-value enum; nil: no constraint

	minLen, maxLen int // -1: none
	pattern        *regexp.Regexp
	prefix         string // when pattern is ^ and a literal: the literal, checked without the regexp

	bounds []bound // minimum, maximum, exclusiveMinimum, exclusiveMaximum

	props    map[string]propRule
	plist    []propEntry // props, when few: a linear scan beats hashing the key
	nreq     int         // required properties
	addl     *fastNode   // additionalProperties schema, nil: any
	addlNone bool        // additionalProperties: false

	items              *fastNode
	minItems, maxItems int // -1: none

	allOf, anyOf, oneOf []*fastNode
	ref                 *fastNode

	// An anyOf whose every alternative is an object requiring property discProp with a
	// distinct string const: the value of discProp picks the only possible alternative.
	discProp string
	disc     map[string]*fastNode
}

type propRule struct {
	node     *fastNode // nil: any value
	req      int       // bit index among the required properties, -1 if optional
	declared bool      // listed in "properties", so additionalProperties does not apply
}

type propEntry struct {
	name string
	rule propRule
}

// maxPropList is the most properties looked up by linear scan.
const maxPropList = 8

type bound struct {
	v         float64
	exact     bool // v is an integer that float64 holds exactly
	lower     bool // minimum or exclusiveMinimum
	exclusive bool
}

// constVal is one allowed value, for the types the fast path compares.
type constVal struct {
	typ uint8
	s   string
	f   float64 // exact integers only
	b   bool
}

// fastKeywords are decided exactly by the fast path. Others that only annotate are
// ignored; any other keyword disables the fast path for the whole schema.
var (
	fastKeywords = []string{"type", "enum", "const", "minLength", "maxLength", "pattern",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "properties", "required",
		"additionalProperties", "items", "minItems", "maxItems", "allOf", "anyOf", "oneOf", "$ref"}
	fastIgnored = []string{"$defs", "definitions", "title", "description", "default",
		"examples", "$comment", "deprecated", "readOnly", "writeOnly", "propertyOrdering",
		"contentEncoding", "contentMediaType", "contentSchema"}
)

type fastBuilder struct {
	resources map[string]any
	nodes     map[string]*fastNode
	ok        bool
}

// buildFast compiles the fast path for the resource top, or returns nil.
func buildFast(resources map[string]any, top string) *fastNode {
	b := &fastBuilder{resources: resources, nodes: map[string]*fastNode{}, ok: true}
	n := b.at(top, "")
	if !b.ok {
		return nil
	}
	n.finishDisc(map[*fastNode]bool{})
	return n
}

func (b *fastBuilder) at(u, ptr string) *fastNode {
	key := u + "#" + ptr
	if n, ok := b.nodes[key]; ok {
		return n
	}
	doc, ok := b.resources[u]
	if !ok {
		b.ok = false
		return nil
	}
	v, ok := lookupPointer(doc, ptr)
	if !ok {
		b.ok = false
		return nil
	}
	n := &fastNode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	b.nodes[key] = n
	b.fill(n, v, u, ptr)
	return n
}

func (b *fastBuilder) fail() { b.ok = false }

func (b *fastBuilder) fill(n *fastNode, v any, u, ptr string) {
	switch v := v.(type) {
	case bool:
		n.never = !v
		return
	case *object:
		b.fillObject(n, v, u, ptr)
	default:
		b.fail()
	}
}

func (b *fastBuilder) fillObject(n *fastNode, o *object, u, ptr string) {
	for _, m := range o.members {
		if slices.Contains(fastIgnored, m.key) ||
			m.key == "$schema" && m.val == "https://json-schema.org/draft/2020-12/schema" ||
			m.key == "$id" && ptr == "" {
			continue
		}
		if !slices.Contains(fastKeywords, m.key) {
			if strings.HasPrefix(m.key, "$") || isKnownKeyword(m.key) {
				b.fail() // a keyword we do not decide, or one that changes resolution
				return
			}
			continue // an unknown keyword is an annotation in 2020-12
		}
		p := ptr + "/" + escapeToken(m.key)
		switch m.key {
		case "type":
			n.types = typeMask(m.val, b)
		case "enum":
			list, _ := m.val.([]any)
			n.consts = []constVal{}
			for _, c := range list {
				n.consts = append(n.consts, b.constOf(c))
			}
		case "const":
			n.consts = []constVal{b.constOf(m.val)}
		case "minLength":
			n.minLen = b.count(m.val)
		case "maxLength":
			n.maxLen = b.count(m.val)
		case "minItems":
			n.minItems = b.count(m.val)
		case "maxItems":
			n.maxItems = b.count(m.val)
		case "pattern":
			s, _ := m.val.(string)
			re, err := regexp.Compile(s)
			if err != nil {
				b.fail()
				return
			}
			n.pattern = re
			if lit := strings.TrimPrefix(s, "^"); lit != s && lit != "" && regexp.QuoteMeta(lit) == lit {
				n.prefix = lit // "^†" and the like, which tool schemas use for references
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			num, ok := m.val.(json.Number)
			f, err := num.Float64()
			if !ok || err != nil || math.IsInf(f, 0) {
				b.fail()
				return
			}
			n.bounds = append(n.bounds, bound{v: f, exact: exactInt(string(num), f),
				lower: strings.HasSuffix(m.key, "inimum"), exclusive: strings.HasPrefix(m.key, "exclusive")})
		case "properties":
			po, _ := m.val.(*object)
			if po == nil {
				b.fail()
				return
			}
			if n.props == nil {
				n.props = map[string]propRule{}
			}
			for _, pm := range po.members {
				r := n.props[pm.key]
				r.node = b.at(u, p+"/"+escapeToken(pm.key))
				r.declared = true
				if _, seen := n.props[pm.key]; !seen {
					r.req = -1
				}
				n.props[pm.key] = r
			}
		case "required":
			list, _ := m.val.([]any)
			if n.props == nil {
				n.props = map[string]propRule{}
			}
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					b.fail()
					return
				}
				r, seen := n.props[s]
				if seen && r.req >= 0 {
					continue
				}
				if !seen {
					r.node = nil
				}
				r.req = n.nreq
				n.nreq++
				n.props[s] = r
			}
			if n.nreq > 64 {
				b.fail()
				return
			}
		case "additionalProperties":
			if m.val == false {
				n.addlNone = true
			} else if m.val != true {
				n.addl = b.at(u, p)
			}
		case "items":
			if _, isList := m.val.([]any); isList {
				b.fail() // draft-07 tuples
				return
			}
			n.items = b.at(u, p)
		case "allOf", "anyOf", "oneOf":
			list, _ := m.val.([]any)
			var subs []*fastNode
			for i := range list {
				subs = append(subs, b.at(u, p+"/"+strconv.Itoa(i)))
			}
			switch m.key {
			case "allOf":
				n.allOf = subs
			case "anyOf":
				n.anyOf = subs
			case "oneOf":
				n.oneOf = subs
			}
		case "$ref":
			ref, _ := m.val.(string)
			target := ref
			if strings.HasPrefix(ref, "#") {
				target = u + ref
			}
			tu, frag, _ := strings.Cut(target, "#")
			frag, err := url.PathUnescape(frag)
			if err != nil || frag != "" && frag[0] != '/' {
				b.fail()
				return
			}
			n.ref = b.at(tu, frag)
		}
		if !b.ok {
			return
		}
	}
}

// finishDisc finds discriminated anyOfs once every node is built.
func (n *fastNode) finishDisc(seen map[*fastNode]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	if len(n.props) <= maxPropList {
		for name, r := range n.props {
			n.plist = append(n.plist, propEntry{name, r})
		}
	}
	if len(n.anyOf) > 1 {
		n.discProp, n.disc = discriminator(n.anyOf)
	}
	for _, r := range n.props {
		r.node.finishDisc(seen)
	}
	for _, s := range [][]*fastNode{n.allOf, n.anyOf, n.oneOf, {n.addl, n.items, n.ref}} {
		for _, c := range s {
			c.finishDisc(seen)
		}
	}
}

func discriminator(alts []*fastNode) (string, map[string]*fastNode) {
	var prop string
	disc := map[string]*fastNode{}
	for i, a := range alts {
		if a.types != tObject || a.ref != nil || len(a.anyOf)+len(a.oneOf)+len(a.allOf) > 0 {
			return "", nil
		}
		if i == 0 {
			for name, r := range a.props {
				if r.req >= 0 && r.node != nil && len(r.node.consts) == 1 && r.node.consts[0].typ == tString {
					if prop == "" || name < prop {
						prop = name
					}
				}
			}
			if prop == "" {
				return "", nil
			}
		}
		r, ok := a.props[prop]
		if !ok || r.req < 0 || r.node == nil || len(r.node.consts) != 1 || r.node.consts[0].typ != tString {
			return "", nil
		}
		v := r.node.consts[0].s
		if _, dup := disc[v]; dup {
			return "", nil
		}
		disc[v] = a
	}
	return prop, disc
}

func isKnownKeyword(k string) bool {
	switch k {
	case "multipleOf", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
		"dependentRequired", "not", "if", "then", "else", "dependentSchemas", "prefixItems",
		"contains", "patternProperties", "propertyNames", "unevaluatedItems",
		"unevaluatedProperties", "format", "dependencies", "additionalItems", "nullable":
		return true
	}
	return false
}

func typeMask(v any, b *fastBuilder) uint8 {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	}
	var m uint8
	for _, t := range names {
		switch t {
		case "null":
			m |= tNull
		case "boolean":
			m |= tBool
		case "object":
			m |= tObject
		case "array":
			m |= tArray
		case "number":
			m |= tNumber | tInteger
		case "string":
			m |= tString
		case "integer":
			m |= tInteger
		default:
			b.fail()
		}
	}
	return m
}

func (b *fastBuilder) constOf(v any) constVal {
	switch v := v.(type) {
	case nil:
		return constVal{typ: tNull}
	case bool:
		return constVal{typ: tBool, b: v}
	case string:
		return constVal{typ: tString, s: v}
	case json.Number:
		f, err := v.Float64()
		if err == nil && exactInt(string(v), f) {
			return constVal{typ: tNumber, f: f}
		}
	}
	b.fail() // objects, arrays and fractions are compared by the library
	return constVal{}
}

func (b *fastBuilder) count(v any) int {
	num, _ := v.(json.Number)
	n, err := strconv.Atoi(string(num))
	if err != nil || n < 0 {
		b.fail()
	}
	return n
}

// exactInt reports whether the literal s is an integer that f holds exactly.
func exactInt(s string, f float64) bool {
	return !strings.ContainsAny(s, ".eE") && math.Abs(f) < 1<<53
}

// acceptsObject is accepts for an object whose members visit is given.
func (n *fastNode) acceptsObject(data []byte, visit func(key, value []byte)) bool {
	i := flatjson.SkipWS(data, 0)
	if i >= len(data) || data[i] != '{' || n.never {
		return false
	}
	end, ok := n.checkObject(data, i, 0, visit)
	return ok && n.checkApplicators(data, i, 0) && flatjson.SkipWS(data, end) == len(data)
}

// accepts reports whether data is certainly valid. false means "ask the library".
func (n *fastNode) accepts(data []byte) bool {
	end, ok := n.check(data, flatjson.SkipWS(data, 0), 0)
	return ok && flatjson.SkipWS(data, end) == len(data)
}

const maxFastDepth = 200

// check validates the value at data[i:] (i at its first byte) and returns its end.
func (n *fastNode) check(d []byte, i, depth int) (int, bool) {
	if i >= len(d) || depth > maxFastDepth || n.never {
		return 0, false
	}
	var end int
	var ok bool
	switch c := d[i]; {
	case c == '{':
		end, ok = n.checkObject(d, i, depth, nil)
	case c == '[':
		end, ok = n.checkArray(d, i, depth)
	case c == '"':
		end, ok = n.checkString(d, i)
	case c == '-' || c >= '0' && c <= '9':
		end, ok = n.checkNumber(d, i)
	case c == 't' || c == 'f':
		end, ok = n.checkBool(d, i)
	case c == 'n':
		end, ok = n.checkNull(d, i)
	}
	if !ok {
		return 0, false
	}
	if n.ref == nil && n.allOf == nil && n.anyOf == nil && n.oneOf == nil { // most nodes: no call
		return end, true
	}
	return end, n.checkApplicators(d, i, depth)
}

func (n *fastNode) checkApplicators(d []byte, i, depth int) bool {
	if n.ref != nil {
		if _, ok := n.ref.check(d, i, depth+1); !ok {
			return false
		}
	}
	for _, s := range n.allOf {
		if _, ok := s.check(d, i, depth+1); !ok {
			return false
		}
	}
	if n.anyOf != nil {
		if n.disc != nil {
			alt := n.pick(d, i)
			if alt == nil {
				return false
			}
			if _, ok := alt.check(d, i, depth+1); !ok {
				return false
			}
		} else {
			matched := false
			for _, s := range n.anyOf {
				if _, ok := s.check(d, i, depth+1); ok {
					matched = true
					break
				}
			}
			if !matched {
				return false
			}
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, s := range n.oneOf {
			if _, ok := s.check(d, i, depth+1); ok {
				matched++
			}
		}
		if matched != 1 {
			return false // none, or several: either way the library reports it
		}
	}
	return true
}

// pick returns the alternative named by the discriminator property of the object at
// d[i], or nil.
func (n *fastNode) pick(d []byte, i int) *fastNode {
	if d[i] != '{' {
		return nil
	}
	var found *fastNode
	i = flatjson.SkipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return nil
	}
	for i < len(d) {
		key, esc, end, ok := flatjson.ScanString(d, i)
		if !ok || esc {
			return nil
		}
		i = flatjson.SkipWS(d, end)
		if i >= len(d) || d[i] != ':' {
			return nil
		}
		i = flatjson.SkipWS(d, i+1)
		if string(key) == n.discProp {
			if i >= len(d) || d[i] != '"' {
				return nil
			}
			val, esc, vend, ok := flatjson.ScanString(d, i)
			if !ok || esc {
				return nil
			}
			found = n.disc[string(val)] // the last occurrence wins, as in decoding
			i = vend
		} else {
			end, ok := skipValue(d, i, 0)
			if !ok {
				return nil
			}
			i = end
		}
		i = flatjson.SkipWS(d, i)
		if i < len(d) && d[i] == ',' {
			i = flatjson.SkipWS(d, i+1)
			continue
		}
		break
	}
	return found
}

func (n *fastNode) prop(key []byte) (propRule, bool) {
	if n.props == nil {
		return propRule{}, false
	}
	if len(n.plist) > 0 {
		for i := range n.plist {
			if n.plist[i].name == string(key) {
				return n.plist[i].rule, true
			}
		}
		return propRule{}, false
	}
	r, ok := n.props[string(key)]
	return r, ok
}

func (n *fastNode) allows(t uint8) bool { return n.types == 0 || n.types&t != 0 }

// checkObject checks the object at d[i]; visit, when not nil, is given
// each member once its value is checked.
func (n *fastNode) checkObject(d []byte, i, depth int, visit func(key, value []byte)) (int, bool) {
	if !n.allows(tObject) || n.consts != nil {
		return 0, false
	}
	var seen uint64
	i = flatjson.SkipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, n.nreq == 0
	}
	for i < len(d) {
		key, esc, valid, end, ok := flatjson.ScanStringUTF8(d, i)
		if !ok || esc || !valid { // decoding would change the key
			return 0, false
		}
		i = flatjson.SkipWS(d, end)
		if i >= len(d) || d[i] != ':' {
			return 0, false
		}
		i = flatjson.SkipWS(d, i+1)
		var sub *fastNode
		r, found := n.prop(key)
		if found && r.req >= 0 {
			seen |= 1 << r.req
		}
		switch {
		case found && r.declared:
			sub = r.node
		case n.addlNone:
			return 0, false
		default:
			sub = n.addl
		}
		if sub != nil {
			end, ok = sub.check(d, i, depth+1)
		} else {
			end, ok = skipValue(d, i, depth+1)
		}
		if !ok {
			return 0, false
		}
		if visit != nil {
			visit(key, d[i:end])
		}
		i = flatjson.SkipWS(d, end)
		if i < len(d) && d[i] == ',' {
			i = flatjson.SkipWS(d, i+1)
			continue
		}
		if i < len(d) && d[i] == '}' {
			if n.nreq > 0 && seen != 1<<n.nreq-1 {
				return 0, false
			}
			return i + 1, true
		}
		return 0, false
	}
	return 0, false
}

func (n *fastNode) checkArray(d []byte, i, depth int) (int, bool) {
	if !n.allows(tArray) || n.consts != nil {
		return 0, false
	}
	count := 0
	i = flatjson.SkipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, n.minItems <= 0
	}
	for i < len(d) {
		var end int
		var ok bool
		if n.items != nil {
			end, ok = n.items.check(d, i, depth+1)
		} else {
			end, ok = skipValue(d, i, depth+1)
		}
		if !ok {
			return 0, false
		}
		count++
		i = flatjson.SkipWS(d, end)
		if i < len(d) && d[i] == ',' {
			i = flatjson.SkipWS(d, i+1)
			continue
		}
		if i < len(d) && d[i] == ']' {
			if count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
				return 0, false
			}
			return i + 1, true
		}
		return 0, false
	}
	return 0, false
}

func (n *fastNode) checkString(d []byte, i int) (int, bool) {
	if !n.allows(tString) {
		return 0, false
	}
	s, esc, valid, end, ok := flatjson.ScanStringUTF8(d, i)
	if !ok {
		return 0, false
	}
	if esc && (n.consts != nil || n.pattern != nil || n.minLen >= 0 || n.maxLen >= 0) {
		return 0, false // compare decoded strings in the library
	}
	if n.minLen >= 0 || n.maxLen >= 0 || n.pattern != nil {
		if !valid {
			return 0, false
		}
		if n.minLen >= 0 || n.maxLen >= 0 {
			l := utf8.RuneCount(s)
			if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return 0, false
			}
		}
		switch {
		case n.prefix != "":
			if !bytes.HasPrefix(s, []byte(n.prefix)) {
				return 0, false
			}
		case n.pattern != nil:
			if !n.pattern.Match(s) {
				return 0, false
			}
		}
	}
	if n.consts != nil {
		found := false
		for _, c := range n.consts {
			if c.typ == tString && c.s == string(s) {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return end, true
}

func (n *fastNode) checkNumber(d []byte, i int) (int, bool) {
	end, isInt, ok := scanNumber(d, i)
	if !ok {
		return 0, false
	}
	if n.types != 0 && n.types&tNumber == 0 && (n.types&tInteger == 0 || !isInt) {
		return 0, false // an integer type wants a number without fraction (1.0 goes to the library)
	}
	if n.bounds == nil && n.consts == nil {
		return end, true
	}
	lit := d[i:end]
	f, exact := parseNumber(lit, isInt)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	for _, b := range n.bounds {
		switch {
		case f == b.v && !(exact && b.exact):
			return 0, false // too close to call with floats
		case b.lower && (f < b.v || b.exclusive && f == b.v):
			return 0, false
		case !b.lower && (f > b.v || b.exclusive && f == b.v):
			return 0, false
		}
	}
	if n.consts != nil {
		if !exact {
			return 0, false
		}
		found := false
		for _, c := range n.consts {
			if c.typ == tNumber && c.f == f {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return end, true
}

// parseNumber converts a number literal; exact reports an integer that f holds exactly.
func parseNumber(lit []byte, isInt bool) (f float64, exact bool) {
	if isInt && len(lit) <= 16 {
		var v int64
		neg := lit[0] == '-'
		digits := lit
		if neg {
			digits = lit[1:]
		}
		for _, c := range digits {
			v = v*10 + int64(c-'0')
		}
		if neg {
			v = -v
		}
		if v < 1<<53 && v > -(1<<53) {
			return float64(v), true
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return math.NaN(), false
	}
	return f, false
}

func (n *fastNode) checkBool(d []byte, i int) (int, bool) {
	var end int
	var v bool
	switch {
	case flatjson.HasLiteral(d, i, "true"):
		end, v = i+4, true
	case flatjson.HasLiteral(d, i, "false"):
		end, v = i+5, false
	default:
		return 0, false
	}
	if !n.allows(tBool) {
		return 0, false
	}
	if n.consts != nil {
		found := false
		for _, c := range n.consts {
			if c.typ == tBool && c.b == v {
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return end, true
}

func (n *fastNode) checkNull(d []byte, i int) (int, bool) {
	if !flatjson.HasLiteral(d, i, "null") || !n.allows(tNull) {
		return 0, false
	}
	if n.consts != nil {
		found := false
		for _, c := range n.consts {
			found = found || c.typ == tNull
		}
		if !found {
			return 0, false
		}
	}
	return i + 4, true
}

// scanNumber scans a JSON number; isInt reports a literal with no fraction or exponent.
func scanNumber(d []byte, i int) (end int, isInt, ok bool) {
	j := i
	if j < len(d) && d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
	default:
		return 0, false, false
	}
	isInt = true
	if j < len(d) && d[j] == '.' {
		isInt = false
		j++
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		isInt = false
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return 0, false, false
		}
	}
	return j, isInt, true
}

// skipValue checks the syntax of the value at d[i] and returns its end.
func skipValue(d []byte, i, depth int) (int, bool) {
	if i >= len(d) || depth > maxFastDepth {
		return 0, false
	}
	switch c := d[i]; {
	case c == '"':
		_, _, end, ok := flatjson.ScanString(d, i)
		return end, ok
	case c == '-' || c >= '0' && c <= '9':
		end, _, ok := scanNumber(d, i)
		return end, ok
	case c == 't':
		return i + 4, flatjson.HasLiteral(d, i, "true")
	case c == 'f':
		return i + 5, flatjson.HasLiteral(d, i, "false")
	case c == 'n':
		return i + 4, flatjson.HasLiteral(d, i, "null")
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = flatjson.SkipWS(d, i+1)
		if i < len(d) && d[i] == closing {
			return i + 1, true
		}
		for i < len(d) {
			if c == '{' {
				_, _, end, ok := flatjson.ScanString(d, i)
				if !ok {
					return 0, false
				}
				i = flatjson.SkipWS(d, end)
				if i >= len(d) || d[i] != ':' {
					return 0, false
				}
				i = flatjson.SkipWS(d, i+1)
			}
			end, ok := skipValue(d, i, depth+1)
			if !ok {
				return 0, false
			}
			i = flatjson.SkipWS(d, end)
			if i < len(d) && d[i] == ',' {
				i = flatjson.SkipWS(d, i+1)
				continue
			}
			if i < len(d) && d[i] == closing {
				return i + 1, true
			}
			return 0, false
		}
	}
	return 0, false
}
