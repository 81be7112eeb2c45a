package ref

import (
	"errors"
	"testing"
)

func TestApply(t *testing.T) {
	for _, tt := range []struct {
		name    string
		root    string // "" for no value
		path    string
		method  Method
		value   string
		want    string
		wantErr error
	}{
		{"set onto nothing", "", "a.b", MethodSet, `1`, `{"a":{"b":1}}`, nil},
		{"set replaces", `{"a":{"b":1,"c":2}}`, "a", MethodSet, `{"d":3}`, `{"a":{"d":3}}`, nil},
		{"merge is deep", `{"a":{"b":{"x":1},"c":2}}`, "", MethodMerge, `{"a":{"b":{"y":2}}}`, `{"a":{"b":{"x":1,"y":2},"c":2}}`, nil},
		{"merge replaces arrays", `{"a":[1,2]}`, "", MethodMerge, `{"a":[3]}`, `{"a":[3]}`, nil},
		{"merge of a scalar replaces", `{"a":1}`, "a", MethodMerge, `"s"`, `{"a":"s"}`, nil},
		{"assign is shallow", `{"a":{"b":{"x":1},"c":2}}`, "a", MethodAssign, `{"b":{"y":2}}`, `{"a":{"b":{"y":2},"c":2}}`, nil},
		{"push onto nothing", `{}`, "log", MethodPush, `"x"`, `{"log":["x"]}`, nil},
		{"push onto array", `{"log":["x"]}`, "log", MethodPush, `["y"]`, `{"log":["x",["y"]]}`, nil},
		{"concat", `{"log":["x"]}`, "log", MethodConcat, `["y","z"]`, `{"log":["x","y","z"]}`, nil},
		{"concat onto nothing", ``, "log", MethodConcat, `["y"]`, `{"log":["y"]}`, nil},
		{"array index", `{"a":[{"n":1},{"n":2}]}`, "a.1.n", MethodSet, `3`, `{"a":[{"n":1},{"n":3}]}`, nil},
		{"push onto string", `{"t":"s"}`, "t", MethodPush, `1`, ``, ErrTypeClash},
		{"concat onto number", `{"t":1}`, "t", MethodConcat, `[1]`, ``, ErrTypeClash},
		{"concat of a non-array", `{}`, "t", MethodConcat, `1`, ``, ErrTypeClash},
		{"key below a number", `{"t":1}`, "t.x", MethodSet, `1`, ``, ErrTypeClash},
		{"key in an array", `{"t":[]}`, "t.x", MethodSet, `1`, ``, ErrTypeClash},
		{"index out of range", `{"t":[1]}`, "t.1", MethodSet, `1`, ``, ErrIndexRange},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var root any
			present := tt.root != ""
			if present {
				root, _ = Decode([]byte(tt.root))
			}
			before, _ := Encode(root)
			v, _ := Decode([]byte(tt.value))
			p, _ := ParsePath(tt.path)
			cerr := Check(root, present, p, tt.method, v)
			got, err := Apply(root, present, p, tt.method, v)
			if (cerr == nil) != (err == nil) {
				t.Errorf("Check = %v but Apply = %v", cerr, err)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				if after, _ := Encode(got); string(after) != string(before) {
					t.Errorf("failed Apply changed the value: %s → %s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := Encode(got); string(b) != tt.want {
				t.Errorf("got %s, want %s", b, tt.want)
			}
		})
	}
}

func TestParseMethod(t *testing.T) {
	if m, err := ParseMethod(""); m != MethodSet || err != nil {
		t.Errorf(`ParseMethod("") = %q, %v`, m, err)
	}
	if _, err := ParseMethod("append"); !errors.Is(err, ErrMethod) {
		t.Errorf(`ParseMethod("append") = %v`, err)
	}
}
