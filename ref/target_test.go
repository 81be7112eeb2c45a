package ref

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

type mapSource map[string]json.RawMessage

func (m mapSource) Lookup(kind string, path Path) (json.RawMessage, error) {
	v, ok := m[kind]
	if !ok {
		return nil, &Error{Offset: -1, Err: ErrNotFound}
	}
	return v, nil
}

// TestErrorTarget checks that an evaluation error carries the failing
// reference parsed, as parsing its Ref text gives it.
func TestErrorTarget(t *testing.T) {
	src := mapSource{"input": json.RawMessage(`{"a":1}`)}
	for _, expr := range []string{"†state.r0.y", "†state.x || †state.y.z", "†state"} {
		e, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Eval(src, e)
		re, ok := errors.AsType[*Error](err)
		if !ok {
			t.Fatalf("%s: %v is not an *Error", expr, err)
		}
		got, ok := re.Target()
		want, perr := Parse(re.Ref)
		if !ok || perr != nil || got.Kind != want.Alts[0][0].Kind || !slices.Equal(got.Path, want.Alts[0][0].Path) {
			t.Errorf("%s: Target = %+v, %v; Ref %q parses to %+v", expr, got, ok, re.Ref, want)
		}
	}
	if _, ok := (&Error{Err: ErrNotFound}).Target(); ok {
		t.Error("an error made by hand has a target")
	}
}
