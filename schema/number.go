package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// maxNumber bounds the numbers Validate takes: the exponent of a number
// (1e999999999), and the characters it is written with. The validation
// library computes a number's exact value for minimum, maximum and
// multipleOf, and so does the fast path: past these bounds that takes
// minutes and gigabytes, or crashes the library. No schema keyword or Go
// type needs such a number, and a model (or whoever feeds it) can write
// one, so it is invalid wherever it appears. A schema holding one does not
// compile (a tool's schema may come from an MCP server).
const maxNumber = 1000

// numberOutOfRange finds a number in v beyond maxNumber: its location,
// and the number; n is "" when there is none. The location is built only
// for a number found: every value validated is walked.
func numberOutOfRange(v any) (at []string, n json.Number) {
	switch x := v.(type) {
	case json.Number:
		if !numberInRange(x) {
			return nil, x
		}
	case []any:
		for i, e := range x {
			if at, n := numberOutOfRange(e); n != "" {
				return append([]string{strconv.Itoa(i)}, at...), n
			}
		}
	case map[string]any:
		// The first key in order that holds one, whatever the map's order:
		// the error says where, and its text must not change from run to run.
		found, first := false, ""
		for k, e := range x {
			if found && k > first {
				continue
			}
			if a, m := numberOutOfRange(e); m != "" {
				found, first, at, n = true, k, a, m
			}
		}
		if found {
			return append([]string{first}, at...), n
		}
	case *object: // a schema's tree
		for _, m := range x.members {
			if at, n := numberOutOfRange(m.val); n != "" {
				return append([]string{m.key}, at...), n
			}
		}
	}
	return nil, ""
}

func numberInRange(n json.Number) bool {
	s := string(n)
	if len(s) > maxNumber {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
	return err == nil && exp >= -maxNumber && exp <= maxNumber
}

// rangeError reports a number beyond maxNumber at path.
func rangeError(path []string, n json.Number) *ValidationError {
	s := string(n)
	if len(s) > 40 {
		s = s[:20] + "…" + s[len(s)-10:]
	}
	return &ValidationError{
		InstancePath: pointer(path),
		Message:      "number " + s + " is out of range: at most " + strconv.Itoa(maxNumber) + " characters, exponents within ±" + strconv.Itoa(maxNumber),
	}
}

// countKeywords hold a length or a count: a non-negative integer.
var countKeywords = []string{"minLength", "maxLength", "minItems", "maxItems",
	"minProperties", "maxProperties", "minContains", "maxContains"}

// maxCount is the largest count the validation library holds as it is.
var maxCount = new(big.Float).SetInt64(math.MaxInt64)

// capCounts caps the counts of o above math.MaxInt64 to it. The library
// wraps a larger one around: a maxLength of 2^63 refused every string, a
// minItems of 2^64 took every array. The cap changes no answer, since no
// string, array or object is that long.
func capCounts(o *object) {
	for i, m := range o.members {
		n, ok := m.val.(json.Number)
		if !ok || !slices.Contains(countKeywords, m.key) {
			continue
		}
		if f, ok := new(big.Float).SetString(string(n)); ok && f.Cmp(maxCount) > 0 {
			o.members[i].val = json.Number(strconv.FormatInt(math.MaxInt64, 10))
		}
	}
}
