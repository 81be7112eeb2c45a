package ref

import (
	"encoding/json"
	"fmt"

	"github.com/augceo/agent/internal/jsonfast"
)

// Method says how an output message combines with earlier writes to the
// same place (the call's _outputMethod).
type Method string

// The output methods. The zero Method means MethodSet for output messages
// and MethodMerge at the root for plain data messages.
const (
	MethodSet    Method = "set"    // replace the value (last write wins)
	MethodMerge  Method = "merge"  // deep-merge objects; anything else replaces
	MethodAssign Method = "assign" // shallow-merge objects; anything else replaces
	MethodPush   Method = "push"   // append the value to an array
	MethodConcat Method = "concat" // append every element of an array value
)

// ParseMethod returns the Method named s; "" is MethodSet.
func ParseMethod(s string) (Method, error) {
	switch m := Method(s); m {
	case "":
		return MethodSet, nil
	case MethodSet, MethodMerge, MethodAssign, MethodPush, MethodConcat:
		return m, nil
	}
	return "", fmt.Errorf("%w %q (want set, merge, assign, push or concat)", ErrMethod, s)
}

// Decode decodes JSON into the value model Apply works on: map[string]any,
// []any, string, json.Number, bool and nil. Numbers stay json.Number so
// values round-trip without loss.
func Decode(data []byte) (any, error) {
	if !jsonfast.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil { // cannot happen: Valid and Unmarshal agree
			err = fmt.Errorf("invalid JSON")
		}
		return nil, err
	}
	return jsonfast.Decode(data), nil
}

// Apply writes v at path in root with method m and returns the new root.
// present says whether root holds a value at all. Apply owns root and v: it
// mutates maps in place and stores v without copying, so callers pass values
// nobody else holds. Missing intermediate objects are created; a failed
// Apply leaves root unchanged.
func Apply(root any, present bool, path Path, m Method, v any) (any, error) {
	// Check first: then nothing can fail halfway through a change.
	if err := Check(root, present, path, m, v); err != nil {
		return root, err
	}
	if len(path) == 0 || !present {
		nv, _ := combine(root, present, m, v, path)
		if len(path) == 0 {
			return nv, nil
		}
		return wrap(path, m, v), nil
	}
	cur := root
	for i, seg := range path {
		var child any
		var found bool
		switch c := cur.(type) {
		case map[string]any:
			child, found = c[seg]
			if !found {
				c[seg] = wrap(path[i+1:], m, v)
				return root, nil
			}
			if i == len(path)-1 {
				c[seg], _ = combine(child, true, m, v, path)
				return root, nil
			}
		case []any:
			n, _ := index(seg) // Check saw a valid index
			child = c[n]
			if i == len(path)-1 {
				c[n], _ = combine(child, true, m, v, path)
				return root, nil
			}
		}
		cur = child
	}
	return root, nil
}

// Check reports whether [Apply] would succeed, without changing root.
func Check(root any, present bool, path Path, m Method, v any) error {
	if m == MethodConcat {
		if _, ok := v.([]any); !ok {
			return &Error{Offset: -1, At: path.String(), Err: fmt.Errorf("%w: concat needs an array value, got %s", ErrTypeClash, typeName(v))}
		}
	}
	if !present {
		return nil
	}
	cur := root
	for i, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[seg]
			if !ok {
				return nil
			}
			cur = child
		case []any:
			n, ok := index(seg)
			if !ok {
				return &Error{Offset: -1, At: path[:i+1].String(), Err: fmt.Errorf("%w: key %q in an array", ErrTypeClash, seg)}
			}
			if n >= len(c) {
				return &Error{Offset: -1, At: path[:i+1].String(), Err: fmt.Errorf("%w: index %d, length %d", ErrIndexRange, n, len(c))}
			}
			cur = c[n]
		default:
			return &Error{Offset: -1, At: path[:i].String(), Err: fmt.Errorf("%w: cannot write %q into %s", ErrTypeClash, seg, typeName(c))}
		}
	}
	switch m {
	case MethodPush, MethodConcat:
		if _, ok := cur.([]any); !ok {
			return &Error{Offset: -1, At: path.String(), Err: fmt.Errorf("%w: %s onto %s", ErrTypeClash, m, typeName(cur))}
		}
	}
	return nil
}

// wrap builds the value of a write of v at path onto nothing.
func wrap(path Path, m Method, v any) any {
	v, _ = combine(nil, false, m, v, nil)
	for i := len(path) - 1; i >= 0; i-- {
		v = map[string]any{path[i]: v}
	}
	return v
}

// combine applies method m with value v to cur.
func combine(cur any, present bool, m Method, v any, at Path) (any, error) {
	switch m {
	case MethodMerge:
		if !present {
			return v, nil
		}
		return deepMerge(cur, v), nil
	case MethodAssign:
		cm, ok1 := cur.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !present || !ok1 || !ok2 {
			return v, nil
		}
		for k, x := range vm {
			cm[k] = x
		}
		return cm, nil
	case MethodPush:
		if !present {
			return []any{v}, nil
		}
		a, ok := cur.([]any)
		if !ok {
			return cur, &Error{Offset: -1, At: at.String(), Err: fmt.Errorf("%w: push onto %s", ErrTypeClash, typeName(cur))}
		}
		return append(a, v), nil
	case MethodConcat:
		vs := v.([]any)
		if !present {
			return vs, nil
		}
		a, ok := cur.([]any)
		if !ok {
			return cur, &Error{Offset: -1, At: at.String(), Err: fmt.Errorf("%w: concat onto %s", ErrTypeClash, typeName(cur))}
		}
		return append(a, vs...), nil
	default: // MethodSet and ""
		return v, nil
	}
}

func deepMerge(cur, v any) any {
	cm, ok1 := cur.(map[string]any)
	vm, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return v
	}
	for k, x := range vm {
		if old, ok := cm[k]; ok {
			cm[k] = deepMerge(old, x)
		} else {
			cm[k] = x
		}
	}
	return cm
}

// Get returns the value at path in root, which must be present.
func Get(root any, path Path) (any, error) {
	cur := root
	for i, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[seg]
			if !ok {
				// The whole path, not where the walk stopped: how deep
				// the walk gets depends on unrelated writes.
				return nil, &Error{Offset: -1, At: path.String(), Err: ErrNotFound}
			}
			cur = child
		case []any:
			n, ok := index(seg)
			if !ok {
				return nil, &Error{Offset: -1, At: path[:i+1].String(), Err: fmt.Errorf("%w: key %q in an array", ErrNotFound, seg)}
			}
			if n >= len(c) {
				return nil, &Error{Offset: -1, At: path[:i+1].String(), Err: fmt.Errorf("%w: index %d, length %d", ErrIndexRange, n, len(c))}
			}
			cur = c[n]
		default:
			return nil, &Error{Offset: -1, At: path[:i+1].String(), Err: fmt.Errorf("%w: %s has no key %q", ErrNotFound, typeName(c), seg)}
		}
	}
	return cur, nil
}

// Clone returns a deep copy of a decoded value.
func Clone(v any) any {
	switch c := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, x := range c {
			m[k] = Clone(x)
		}
		return m
	case []any:
		a := make([]any, len(c))
		for i, x := range c {
			a[i] = Clone(x)
		}
		return a
	}
	return v
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64, int:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
