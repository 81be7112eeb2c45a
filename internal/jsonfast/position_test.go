package jsonfast

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestWithPosition(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"a":1,}`, `line 1, column 8: invalid character '}' looking for beginning of object key string`},
		{"{\n  \"ü\": 1,\n  \"b\" 2\n}", `line 3, column 7: invalid character '2' after object key`},
		{`{"a":`, `line 1, column 5: unexpected end of JSON input`},
		{``, `line 1, column 1: unexpected end of JSON input`},
	} {
		var v any
		err := WithPosition([]byte(tt.in), json.Unmarshal([]byte(tt.in), &v))
		if err == nil || err.Error() != tt.want {
			t.Errorf("WithPosition(%q) = %v, want %s", tt.in, err, tt.want)
		}
		if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
			t.Errorf("WithPosition(%q) does not wrap the *json.SyntaxError", tt.in)
		}
	}
	other := errors.New("other")
	if err := WithPosition(nil, other); err != other {
		t.Errorf("WithPosition(other) = %v", err)
	}
}
