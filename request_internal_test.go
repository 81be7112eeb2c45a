package agent

import "testing"

func TestNamesSchemas(t *testing.T) {
	for s, want := range map[string]bool{
		`{"type":"object"}`:                                     false,
		`{"$ref":"#/$defs/a","$defs":{"a":{}}}`:                 false,
		`{"properties":{"c":{"$ref":"City"}}}`:                  true,
		`{"properties":{"c":{"$ref" : "City#/x"}}}`:             true,
		"{\"a\":{\"$ref\":\n\t\"#/x\"},\"b\":{\"$ref\":\"B\"}}": true,
		`{"enum":["$ref"]}`:                                     false,
		`{"const":"\"$ref\":\"X\""}`:                            false, // escaped quotes: no key
		`{"$ref":`:                                              false,
	} {
		if got := namesSchemas([]byte(s)); got != want {
			t.Errorf("namesSchemas(%s) = %v, want %v", s, got, want)
		}
	}
}
