package cli

import (
	"bytes"
	"encoding/json"
)

// marshal encodes v for --json output, indented by indent when it is not
// empty, with <, > and & as they are: the output is read by programs and
// people, not embedded in HTML, and a model's "<b>" should read as such.
func marshal(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
