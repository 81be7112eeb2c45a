package ref

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encoderEncode is what Encode gives for anything: encoding/json's encoder.
func encoderEncode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x<y"],"c":{"z":-1.5e3,"y":"\u00e9\n"}}`, `[]`, `{}`, `"\u2028"`, `0`, `{"\u0000":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := json.NewDecoder(bytes.NewReader([]byte(s)))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		got, err := Encode(v)
		want, werr := encoderEncode(v)
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("Encode(%s) = %s, %v; want %s, %v", s, got, err, want, werr)
		}
	})
}

func TestEncodeOdd(t *testing.T) {
	// Scalars at the top take Encode's own fast path; inside, odd values
	// must be encoded as the encoder does.
	for _, v := range []any{[]any{json.Number("")}, []any{json.Number("1x")}, []any{json.Number("+1")}, []any{json.Number("1 ")}, []any{json.Number("-")}, []any{1.5},
		map[string]any{"a": json.Number("")}, []any{json.RawMessage(`{}`)}, map[string]any{"a<": "\u2028"}} {
		got, err := Encode(v)
		want, werr := encoderEncode(v)
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("Encode(%#v) = %s, %v; want %s, %v", v, got, err, want, werr)
		}
	}
}
