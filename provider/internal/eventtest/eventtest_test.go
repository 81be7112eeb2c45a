package eventtest

import "testing"

func TestComparable(t *testing.T) {
	for _, tt := range []struct {
		data string
		want bool
	}{
		{`{"a":1,"b":{"a":2},"c":["a","a"]}`, true},
		{`[{"a":"a"},{"a":"b"}]`, true},
		{`{"a":1,"b":{"c":2,"c":3}}`, false},
		{`{"a":{"x":1},"a":2}`, false},
		{`{"A":1}`, false},
		{`{"x":"A"}`, false}, // a value, left out too
		{`{"x":"b"}`, true},
		{"{\"a\":\"\xff\"}", false},
		{`{"a":`, true},
	} {
		if got := Comparable([]byte(tt.data), "a", "x"); got != tt.want {
			t.Errorf("Comparable(%s) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
