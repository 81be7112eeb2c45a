package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
	"github.com/google/go-cmp/cmp"
)

// vectorFile is a file of test vectors taken from one spec page.
type vectorFile struct {
	Page  string   `json:"page"`
	Cases []vector `json:"cases"`
}

type vector struct {
	Name      string            `json:"name"`
	Context   json.RawMessage   `json:"context"`
	Canonical []json.RawMessage `json:"canonical"`
	Checks    []check           `json:"checks"`
	Write     *struct {
		Call   json.RawMessage `json:"call"`
		Result json.RawMessage `json:"result"`
		Branch Branch          `json:"branch"`
		Date   time.Time       `json:"date"`
	} `json:"write"`
	Want []json.RawMessage `json:"want"`
}

type check struct {
	Resolve    string          `json:"resolve"`
	Substitute json.RawMessage `json:"substitute"`
	Instance   string          `json:"instance"`
	Want       json.RawMessage `json:"want"`
	Error      string          `json:"error"`
	ErrorText  string          `json:"error_text"`
}

var errorCodes = map[string]error{
	"syntax":       ref.ErrSyntax,
	"not_found":    ref.ErrNotFound,
	"unknown_kind": ref.ErrUnknownKind,
	"index_range":  ref.ErrIndexRange,
	"type_clash":   ref.ErrTypeClash,
}

func loadVectors(t *testing.T) []vectorFile {
	t.Helper()
	files, err := filepath.Glob("../testdata/spec/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no spec vectors: %v", err)
	}
	var out []vectorFile
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vf vectorFile
		if err := json.Unmarshal(data, &vf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, vf)
	}
	return out
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, got, want []byte) string {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return "got invalid JSON: " + string(got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON: %s", want)
	}
	return cmp.Diff(g, w)
}

func TestSpecVectors(t *testing.T) {
	for _, vf := range loadVectors(t) {
		for _, v := range vf.Cases {
			t.Run(vf.Page+"/"+v.Name, func(t *testing.T) {
				if v.Write != nil {
					runWrite(t, v)
					return
				}
				msgs, err := ParseContext(v.Context)
				if err != nil {
					t.Fatalf("ParseContext: %v", err)
				}
				checkCanonical(t, msgs, v.Canonical)
				log, err := NewLog(msgs...)
				if err != nil {
					t.Fatalf("NewLog: %v", err)
				}
				for _, c := range v.Checks {
					var src, oracle ref.Source = log, naive{msgs: msgs}
					if c.Instance != "" {
						src, oracle = log.Instance(c.Instance), naive{msgs: msgs, instance: c.Instance}
					}
					name := c.Resolve
					if name == "" {
						name = string(c.Substitute)
					}
					for _, s := range []struct {
						name string
						src  ref.Source
					}{{"index", src}, {"naive", oracle}} {
						var got json.RawMessage
						var err error
						if c.Substitute != nil {
							got, err = ref.Substitute(s.src, c.Substitute)
							if json.Valid(c.Substitute) && bytes.HasPrefix(bytes.TrimSpace(c.Substitute), []byte("{")) {
								// A valid object gives the same without its check.
								got2, err2 := ref.SubstituteObject(s.src, c.Substitute)
								checkResult(t, s.name+" object "+name, got2, err2, c)
							}
						} else {
							got, err = ref.EvalString(s.src, c.Resolve)
						}
						checkResult(t, s.name+" "+name, got, err, c)
					}
				}
			})
		}
	}
}

func checkResult(t *testing.T, name string, got json.RawMessage, err error, c check) {
	t.Helper()
	if c.Error != "" {
		want := errorCodes[c.Error]
		if want == nil {
			t.Fatalf("%s: unknown error code %q", name, c.Error)
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %s, %v; want error %s", name, got, err, c.Error)
			return
		}
		var re *ref.Error
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v is not a *ref.Error", name, err)
		}
		if c.ErrorText != "" && err.Error() != c.ErrorText {
			t.Errorf("%s: error text\ngot  %s\nwant %s", name, err, c.ErrorText)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if d := jsonEqual(t, got, c.Want); d != "" {
		t.Errorf("%s: got %s (-got +want):\n%s", name, got, d)
	}
}

func checkCanonical(t *testing.T, msgs []Message, want []json.RawMessage) {
	t.Helper()
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %d: %v", i, err)
		}
		// Canonical form is a fixed point: parse and marshal give the same bytes.
		m2, err := Parse(b)
		if err != nil {
			t.Fatalf("reparse %d %s: %v", i, b, err)
		}
		b2, _ := json.Marshal(m2)
		if string(b) != string(b2) {
			t.Errorf("message %d not stable:\n%s\n%s", i, b, b2)
		}
		if want != nil {
			if d := jsonEqual(t, b, want[i]); d != "" {
				t.Errorf("canonical %d: got %s (-got +want):\n%s", i, b, d)
			}
		}
	}
}

func runWrite(t *testing.T, v vector) {
	w := v.Write
	got, err := Outputs(w.Call, w.Result, w.Branch, w.Date)
	if err != nil {
		t.Fatalf("Outputs: %v", err)
	}
	if len(got) != len(v.Want) {
		t.Fatalf("got %d messages, want %d: %v", len(got), len(v.Want), got)
	}
	for i := range got {
		b, _ := json.Marshal(got[i])
		if d := jsonEqual(t, b, v.Want[i]); d != "" {
			t.Errorf("message %d: got %s (-got +want):\n%s", i, b, d)
		}
		// What Outputs writes must be what a log reads back.
		if _, err := NewLog(got[i]); err != nil {
			t.Errorf("message %d does not load: %v", i, err)
		}
	}
	// An Output parsed once writes the same messages.
	meta, err := ParseCallMeta(w.Call)
	if err != nil {
		t.Fatalf("ParseCallMeta: %v", err)
	}
	o, err := ParseOutput(meta)
	if err != nil {
		t.Fatalf("ParseOutput: %v", err)
	}
	again, err := o.Messages(w.Call, meta.Instance, w.Result, w.Branch, w.Date)
	if err != nil {
		t.Fatalf("Output.Messages: %v", err)
	}
	a, _ := json.Marshal(again)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Errorf("Output.Messages: got %s, want %s", a, b)
	}
}
