package message

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// MarshalJSON writes the canonical form of m: data messages as
// {"type":"data","kind":...}, keys in a fixed order, extra fields sorted,
// no HTML escaping. (json.Marshal re-escapes <, > and & in what this
// returns; call MarshalJSON directly where bytes must match.)
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	w := objWriter{b: &b}
	w.str("type", string(m.Type))
	if m.Type == TypeText {
		w.str("role", string(m.Role))
		w.strAlways("text", m.Text)
	}
	if m.Type == TypeData {
		w.str("kind", m.Kind)
	}
	w.str("_instance", m.Instance)
	if a := m.Advisor; a != nil {
		w.str("advisor", a.Name)
		w.str("id", a.ID)
		w.str("role", a.Role)
		w.str("on", a.On)
		if a.Scopes != nil {
			s, _ := json.Marshal(a.Scopes)
			w.raw("scopes", s)
		}
		if a.IsInstanced {
			w.raw("isInstanced", []byte("true"))
		}
	}
	w.str("description", m.Description)
	w.raw("schema", m.Schema)
	w.raw("data", m.Data)
	w.raw("tool", m.Tool)
	w.raw("plan", m.Plan)
	w.raw("meta", m.Meta)
	w.raw("call", m.Failed)
	w.str("error", m.Error)
	w.raw("_call", m.Call)
	w.str("_date", m.Date)
	w.str("_outputMethod", string(m.Method))
	w.str("_outputPath", m.OutputPath)
	if len(m.Extra) > 0 {
		var f fields
		if err := json.Unmarshal(m.Extra, &f); err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(f)) {
			w.raw(k, f[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type objWriter struct {
	b *bytes.Buffer
	n int
}

func (w *objWriter) key(k string) {
	if w.n > 0 {
		w.b.WriteByte(',')
	}
	w.n++
	writeString(w.b, k)
	w.b.WriteByte(':')
}

func (w *objWriter) str(k, v string) {
	if v != "" {
		w.strAlways(k, v)
	}
}

func (w *objWriter) strAlways(k, v string) {
	w.key(k)
	writeString(w.b, v)
}

func (w *objWriter) raw(k string, v json.RawMessage) {
	if len(v) > 0 {
		w.key(k)
		w.b.Write(v)
	}
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	if plainString(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// plainString reports whether s is printable ASCII without a quote or a
// backslash: what JSON encoders write as it is, HTML escaping aside.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// encodeFields writes f as a JSON object with sorted keys.
func encodeFields(f fields) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(f)) {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, k)
		b.WriteByte(':')
		b.Write(compact(f[k]))
	}
	b.WriteByte('}')
	return b.Bytes()
}
