package jsonfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// WithPosition adds to err, when it is a *json.SyntaxError from decoding
// data, the line and column (from 1, in characters) of the byte it
// reports, so that whoever wrote a file by hand finds the mistake. Any
// other error comes back as it is.
func WithPosition(data []byte, err error) error {
	se, ok := errors.AsType[*json.SyntaxError](err)
	if !ok {
		return err
	}
	// The error came after reading Offset bytes: the last is the culprit.
	before := data[:max(0, min(int(se.Offset)-1, len(data)))]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
