package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/internal/jsonfast"
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

// ParseCallMeta reads the meta-properties of a call. The call must be a
// JSON object, and each of these properties a string (or null, which
// strict structured-output modes write for absent ones).
func ParseCallMeta(call json.RawMessage) (CallMeta, error) {
	var m CallMeta
	if t := bytes.TrimSpace(call); !jsonfast.Valid(call) || len(t) == 0 || t[0] != '{' {
		return m, errors.New("a call must be a JSON object")
	}
	var err error
	jsonfast.Members(call, func(key string, v []byte) bool {
		var dst *string
		switch key {
		case "_tool":
			dst = &m.Tool
		case "_instance":
			dst = &m.Instance
		case "_outputPath":
			dst = &m.OutputPath
		case "_outputMethod":
			dst = &m.OutputMethod
		default:
			return true
		}
		switch s := jsonfast.Decode(v).(type) {
		case string:
			*dst = s
		case nil:
		default:
			err = fmt.Errorf("%s must be a string, got %s", key, v)
			return false
		}
		return true
	})
	return m, err
}
