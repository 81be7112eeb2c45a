package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/ref"
)

// CallMeta holds the meta-properties of a call (004) that the runtime
// reads: which tool, which instance, and where and how to write the result.
// An absent or null property is "".
type CallMeta struct {
	Tool         string // _tool
	Instance     string // _instance
	OutputPath   string // _outputPath
	OutputMethod string // _outputMethod
}

// Field returns the field of m that holds the meta-property key
// (unquoted, as "_tool"), or nil when key is none of them.
func (m *CallMeta) Field(key []byte) *string {
	switch string(key) {
	case "_tool":
		return &m.Tool
	case "_instance":
		return &m.Instance
	case "_outputPath":
		return &m.OutputPath
	case "_outputMethod":
		return &m.OutputMethod
	}
	return nil
}

// ParseCallMeta reads the meta-properties of a call. The call must be a
// JSON object, and each of these properties a string (or null, which
// strict structured-output modes write for absent ones).
func ParseCallMeta(call json.RawMessage) (CallMeta, error) {
	m, _, err := parseCallMeta(call, false, false)
	return m, err
}

// ParseCallMetaShared is [ParseCallMeta] for a call whose bytes never
// change, as a run's calls do not: the strings share those bytes instead
// of copying them. With object, call is known to be valid JSON (an
// [jsonstream.Extractor] hands over only valid values) and is not checked
// again. In the same pass it tells whether a parameter (a member that is
// not a meta-property) may hold a reference: refs is false when none
// holds a dagger, so there is nothing to substitute.
func ParseCallMetaShared(call json.RawMessage, object bool) (m CallMeta, refs bool, err error) {
	return parseCallMeta(call, true, object)
}

func parseCallMeta(call json.RawMessage, share, object bool) (m CallMeta, refs bool, err error) {
	if object {
		if t := bytes.TrimLeft(call, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			object = false // not an object after all: check it all
		}
	}
	if !object {
		if t := bytes.TrimSpace(call); !jsonfast.Valid(call) || len(t) == 0 || t[0] != '{' {
			return m, false, errors.New("a call must be a JSON object")
		}
	}
	jsonfast.RawMembers(call, func(lit []byte, v []byte) bool {
		k := lit[1 : len(lit)-1]
		if len(k) > 0 && (k[0] == '_' || k[0] == '\\') && bytes.IndexByte(k, '\\') >= 0 {
			k = []byte(jsonfast.Unquote(lit)) // escaped: it may be a meta-property
		}
		if len(k) == 0 || k[0] != '_' { // a parameter: skip it without allocating its key
			refs = refs || mayRef(v)
			return true
		}
		dst := m.Field(k)
		if dst == nil {
			return true
		}
		if len(v) > 0 && v[0] == '"' { // the common case, without boxing the string
			if share {
				*dst = jsonfast.UnquoteShared(v)
			} else {
				*dst = jsonfast.Unquote(v)
			}
			return true
		}
		switch s := jsonfast.Decode(v).(type) {
		case string:
			*dst = s
		case nil:
		default:
			err = fmt.Errorf("%s must be a string, got %s", string(k), v)
			return false
		}
		return true
	})
	return m, refs, err
}

// mayRef reports whether a raw value holds a dagger, written or escaped.
func mayRef(v []byte) bool {
	return bytes.Contains(v, []byte(ref.Dagger)) || bytes.Contains(v, []byte(`\u2020`))
}
