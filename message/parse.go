package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/ref"
)

// ParseContext parses a JSON array of messages in any accepted spelling.
// An error names the index of the first malformed message and its field.
func ParseContext(data []byte) ([]Message, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("message: context must be a JSON array of messages, got %s", te.Value)
		}
		return nil, fmt.Errorf("message: context: %w", jsonfast.WithPosition(data, err))
	}
	msgs := make([]Message, len(raws))
	for i, r := range raws {
		if err := msgs[i].UnmarshalJSON(r); err != nil {
			return nil, at(i, err)
		}
	}
	return msgs, nil
}

// Parse parses one message in any accepted spelling.
func Parse(data []byte) (Message, error) {
	var m Message
	err := m.UnmarshalJSON(data)
	return m, err
}

// fields is a decoded JSON object whose values stay raw.
type fields map[string]json.RawMessage

func (f fields) take(k string) (json.RawMessage, bool) {
	v, ok := f[k]
	if ok {
		delete(f, k)
	}
	return v, ok
}

func (f fields) str(k string) (string, error) {
	v, ok := f.take(k)
	if !ok {
		return "", nil
	}
	var s string
	if err := unquote(v, &s); err != nil {
		return "", fieldErr(k, "must be a string, got %s", jsonType(v))
	}
	return s, nil
}

// unquote decodes v, a valid JSON value (as fields hold), into s. A
// string with no escapes is its bytes between the quotes, as
// json.Unmarshal would give them: most strings of a log (types, kinds,
// dates, texts) are, and a resume or a continued turn decodes the whole
// log.
func unquote(v json.RawMessage, s *string) error {
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' && bytes.IndexByte(v[1:n-1], '\\') < 0 && utf8.Valid(v[1:n-1]) {
		*s = string(v[1 : n-1])
		return nil
	}
	return json.Unmarshal(v, s)
}

// UnmarshalJSON parses any accepted spelling of a message into its
// canonical form.
func (m *Message) UnmarshalJSON(data []byte) error {
	*m = Message{}
	var f fields
	if t := jsonType(data); t != "object" {
		return &Error{Index: -1, Err: fmt.Errorf("%w: a message must be a JSON object, got %s", ErrInvalid, t)}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return &Error{Index: -1, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	typ, err := f.str("type")
	if err != nil {
		return err
	}
	if m.Instance, err = f.str("_instance"); err != nil {
		return err
	}
	switch typ {
	case "":
		if _, ok := f["role"]; !ok {
			return fieldErr("type", "missing (and no role)")
		}
		err = m.parseConversational(f)
	case string(TypeText):
		err = m.parseText(f, "text")
	case "system", "user", "assistant":
		m.Role = Role(typ)
		if _, ok := f["message"]; ok {
			err = m.parseText(f, "message")
		} else {
			err = m.parseText(f, "text")
		}
		m.Role = Role(typ)
	case string(TypeData):
		err = m.parseData(f, "")
	case KindInput, KindState:
		err = m.parseData(f, typ)
	case string(TypeTool):
		m.Type = TypeTool
		m.Tool, err = required(f, "tool", "object", "string")
	case string(TypePlan):
		m.Type = TypePlan
		m.Plan, err = required(f, "plan", "array")
	case string(TypeMeta):
		m.Type = TypeMeta
		m.Meta, err = required(f, "meta", "object")
	case string(TypeAdvisor):
		err = m.parseAdvisor(f)
	case string(TypeError):
		m.Type = TypeError
		if m.Error, err = f.str("error"); err == nil && m.Error == "" {
			err = fieldErr("error", "missing")
		}
		if err == nil {
			m.Failed, err = optional(f, "call", "object")
		}
	default:
		m.Type = Type(typ)
	}
	if err != nil {
		return err
	}
	if err := m.parseHidden(f); err != nil {
		return err
	}
	if len(f) > 0 {
		m.Extra = encodeFields(f)
	}
	return nil
}

func (m *Message) parseConversational(f fields) error {
	role, err := f.str("role")
	if err != nil {
		return err
	}
	content, ok := f.take("content")
	if !ok {
		return m.parseText(f, "text")
	}
	switch jsonType(content) {
	case "string":
		m.Type, m.Role = TypeText, Role(role)
		if err := json.Unmarshal(content, &m.Text); err != nil {
			return fieldErr("content", "%v", err)
		}
	case "object":
		// A custom content type: {role, content: {type: "input", ...}}.
		inst := m.Instance
		if err := m.UnmarshalJSON(content); err != nil {
			var me *Error
			if errors.As(err, &me) && me.Field != "" {
				return fieldErr("content."+me.Field, "%v", errors.Unwrap(me.Err))
			}
			return fieldErr("content", "%v", err)
		}
		if m.Instance == "" {
			m.Instance = inst
		}
		if m.Type == TypeText && (m.Role == "" || m.Role == RoleUser) {
			m.Role = Role(role)
		}
		return nil
	case "array":
		// OpenAI-style parts: only text parts can be represented.
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(content, &parts); err != nil {
			return fieldErr("content", "parts must be objects: %v", err)
		}
		var b strings.Builder
		for i, p := range parts {
			if p.Type != "text" {
				return fieldErr(fmt.Sprintf("content.%d.type", i), "only text parts are supported, got %q", p.Type)
			}
			b.WriteString(p.Text)
		}
		m.Type, m.Role, m.Text = TypeText, Role(role), b.String()
	default:
		return fieldErr("content", "must be a string, an object or an array, got %s", jsonType(content))
	}
	return m.checkRole()
}

func (m *Message) parseText(f fields, key string) error {
	role := m.Role
	if r, err := f.str("role"); err != nil {
		return err
	} else if r != "" {
		role = Role(r)
	}
	v, ok := f.take(key)
	if !ok {
		return fieldErr(key, "missing")
	}
	if err := unquote(v, &m.Text); err != nil {
		return fieldErr(key, "must be a string, got %s", jsonType(v))
	}
	m.Type, m.Role = TypeText, role
	return m.checkRole()
}

func (m *Message) checkRole() error {
	switch m.Role {
	case "":
		m.Role = RoleUser
	case RoleUser, RoleSystem, RoleAssistant:
	default:
		return fieldErr("role", "must be user, system or assistant, got %q", m.Role)
	}
	return nil
}

// parseData reads a data message; short is "input" or "state" for the
// short spellings, "" for type data.
func (m *Message) parseData(f fields, short string) error {
	m.Type = TypeData
	kind, err := f.str("kind")
	if err != nil {
		return err
	}
	switch {
	case short != "" && kind != "" && kind != short:
		return fieldErr("kind", "is %q but type is %q", kind, short)
	case short != "":
		kind = short
	case kind == "":
		kind = KindData
	}
	if !ref.KindValid(kind) {
		return fieldErr("kind", "%q is not a valid kind (letters, digits, '_' and '-')", kind)
	}
	m.Kind = kind
	if m.Description, err = f.str("description"); err != nil {
		return err
	}
	if m.Schema, err = optional(f, "schema", "object", "boolean"); err != nil {
		return err
	}
	if short != "" {
		if v, ok := f.take(short); ok {
			if _, dup := f["data"]; dup {
				return fieldErr("data", "given together with %q", short)
			}
			m.Data = compact(v)
			return nil
		}
	}
	if v, ok := f.take("data"); ok {
		m.Data = compact(v)
		return nil
	}
	if short == "" {
		return nil
	}
	// Inline payload: every field that is not reserved.
	inline := fields{}
	for k, v := range f {
		if !strings.HasPrefix(k, "_") {
			inline[k] = v
			delete(f, k)
		}
	}
	if len(inline) > 0 {
		m.Data = encodeFields(inline)
	}
	return nil
}

func (m *Message) parseAdvisor(f fields) error {
	m.Type = TypeAdvisor
	a := &Advisor{}
	var err error
	if a.Name, err = f.str("advisor"); err != nil {
		return err
	}
	if a.ID, err = f.str("id"); err != nil {
		return err
	}
	if a.Role, err = f.str("role"); err != nil {
		return err
	}
	if a.Name != "" {
		// A registered advisor: its definition is the registry's.
		_, schema := f["schema"]
		_, instanced := f["isInstanced"]
		for _, own := range []struct {
			field string
			set   bool
		}{{"id", a.ID != ""}, {"role", a.Role != ""}, {"schema", schema}, {"isInstanced", instanced}} {
			if own.set {
				return fieldErr(own.field, "is the registered advisor's: a message naming advisor %q may set only on and scopes", a.Name)
			}
		}
	} else if a.ID == "" {
		return fieldErr("id", "missing (or name a registered advisor with \"advisor\")")
	}
	if a.On, err = f.str("on"); err != nil {
		return err
	}
	switch a.On {
	case "", "start", "finish", "request", "demand":
	default:
		return fieldErr("on", "must be start, finish, request or demand, got %q", a.On)
	}
	if v, ok := f.take("scopes"); ok {
		if err := json.Unmarshal(v, &a.Scopes); err != nil {
			return fieldErr("scopes", "must be an array of strings")
		}
	}
	if v, ok := f.take("isInstanced"); ok {
		if err := json.Unmarshal(v, &a.IsInstanced); err != nil {
			return fieldErr("isInstanced", "must be a boolean, got %s", jsonType(v))
		}
	}
	if m.Schema, err = optional(f, "schema", "object", "boolean"); err != nil {
		return err
	}
	m.Advisor = a
	return nil
}

// parseHidden reads the output metadata of data messages.
func (m *Message) parseHidden(f fields) error {
	if m.Type != TypeData {
		return nil
	}
	var err error
	if m.Call, err = optional(f, "_call", "object"); err != nil {
		return err
	}
	if m.Date, err = f.str("_date"); err != nil {
		return err
	}
	method, err := f.str("_outputMethod")
	if err != nil {
		return err
	}
	if method != "" {
		if m.Method, err = ref.ParseMethod(method); err != nil {
			return fieldErr("_outputMethod", "%v", err)
		}
	}
	if m.OutputPath, err = f.str("_outputPath"); err != nil {
		return err
	}
	if m.OutputPath == "" && m.Call != nil {
		m.OutputPath = inferOutputPath(m)
	}
	if m.OutputPath == "" {
		return nil
	}
	r, err := singleRef(m.OutputPath)
	if err != nil {
		return fieldErr("_outputPath", "%v", err)
	}
	if r.Kind != m.Kind {
		return fieldErr("_outputPath", "writes kind %q but the message has kind %q", r.Kind, m.Kind)
	}
	m.OutputPath = r.String()
	if m.Data == nil {
		return fieldErr("data", "missing in an output message")
	}
	if _, err := valueAt(m.Data, r.Path); err != nil {
		return fieldErr("data", "does not hold the value at %s: %v", m.OutputPath, err)
	}
	return nil
}

// inferOutputPath finds the target of an output message written before
// _outputPath was recorded on it: the one reference of the call's output
// expression with this kind whose path the data holds.
func inferOutputPath(m *Message) string {
	var call struct {
		OutputPath string `json:"_outputPath"`
	}
	if json.Unmarshal(m.Call, &call) != nil || call.OutputPath == "" {
		return ""
	}
	e, err := ref.Parse(call.OutputPath)
	if err != nil {
		return ""
	}
	found := ""
	for _, r := range e.Refs() {
		if r.Kind != m.Kind {
			continue
		}
		if _, err := valueAt(m.Data, r.Path); err == nil || len(r.Path) == 0 { // a root path holds any data, even none
			if found != "" && found != r.String() {
				return ""
			}
			found = r.String()
		}
	}
	return found
}

func singleRef(s string) (ref.Ref, error) {
	e, err := ref.Parse(s)
	if err != nil {
		return ref.Ref{}, err
	}
	if len(e.Alts) != 1 || len(e.Alts[0]) != 1 {
		return ref.Ref{}, fmt.Errorf("must be a single reference, got %q", s)
	}
	return e.Alts[0][0], nil
}

// valueAt decodes data and returns the value it holds at path, reading
// path segments as object keys (the shape written by Outputs).
func valueAt(data json.RawMessage, path ref.Path) (any, error) {
	x, err := ref.Decode(data)
	if err != nil {
		return nil, err
	}
	for i, seg := range path {
		obj, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", path[:i].String())
		}
		if x, ok = obj[seg]; !ok {
			return nil, fmt.Errorf("no key %q at %q", seg, path[:i].String())
		}
	}
	return x, nil
}

func required(f fields, k string, types ...string) (json.RawMessage, error) {
	if _, ok := f[k]; !ok {
		return nil, fieldErr(k, "missing")
	}
	return optional(f, k, types...)
}

func optional(f fields, k string, types ...string) (json.RawMessage, error) {
	v, ok := f.take(k)
	if !ok {
		return nil, nil
	}
	if t := jsonType(v); !slices.Contains(types, t) {
		return nil, fieldErr(k, "must be %s, got %s", strings.Join(types, " or "), t)
	}
	return compact(v), nil
}

func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v
	}
	return b.Bytes()
}

// jsonType names the JSON type of raw.
func jsonType(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}
