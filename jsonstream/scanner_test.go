package jsonstream

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cases are inputs, valid and not, each checked against encoding/json.
var cases = []struct {
	name string
	in   string
}{
	// valid
	{"empty object", `{}`},
	{"empty array", `[]`},
	{"zero", `0`},
	{"minus zero", `-0`},
	{"exponent", `1.5e+10`},
	{"negative fraction", `-1.0E-2`},
	{"big", `[1e5,0.0,123456789012345678901234567890,1e400]`},
	{"string", `"a"`},
	{"empty string", `""`},
	{"literals", `[true,false,null]`},
	{"white space", " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } } \n"},
	{"solution", `{"calls":[{"_tool":"x","a":{"b":[1,"2",true,null]}},{"_tool":"y"}],"output":null}`},
	{"escapes", `"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`},
	{"lone surrogate", `["\ud800","\udc00x","\ud800\u0041"]`},
	{"utf-8", `"é日本"`},
	{"invalid utf-8", "[\"\xff\xfe\",{\"\xffk\":1}]"},
	{"nul escape", `"\u0000"`},
	{"deep", `[[[[[{"a":[[{}]]}]]]]]`},
	{"empty key", `{"":1,"calls":[]}`},
	{"escaped key", `{"\u0063alls":[1,2],"a":{"0":"zero"}}`},
	{"duplicate key", `{"a":1,"a":2}`},
	{"root array", `[{"a":1}, [2], "3", 4.5, true, null]`},
	{"numbers at end", `[0,-1,2.5,3e2,4E-1]`},
	{"fence", "```json\n{\"calls\":[{\"_tool\":\"a\"}],\"output\":null}\n```"},
	{"fence unclosed", "```\n[1,2]"},
	{"fence with spaces", "  ```JSON \r\n [1] ```  \n"},
	{"fence ticks in string", "```json\n\"a```\"\n```"},
	// invalid
	{"nothing", ``},
	{"only space", ` `},
	{"open object", `{`},
	{"open array", `[`},
	{"key only", `{"a"`},
	{"key colon", `{"a":`},
	{"no close", `{"a":1`},
	{"comma then end", `{"a":1,`},
	{"trailing comma array", `[1,]`},
	{"leading comma", `[,1]`},
	{"comma object", `{,}`},
	{"trailing comma object", `{"a":1,}`},
	{"no colon", `{"a" 1}`},
	{"number key", `{1:2}`},
	{"no comma", `[1 2]`},
	{"mismatch object", `{"a":1]`},
	{"mismatch array", `[1}`},
	{"mismatch empty array", `[}`},
	{"mismatch empty object", `{]`},
	{"close array", `]`},
	{"close object", `}`},
	{"leading zero", `01`},
	{"leading zero in array", `[01]`},
	{"minus", `-`},
	{"minus letter", `-a`},
	{"dot end", `1.`},
	{"dot exponent", `1.e5`},
	{"dot start", `.5`},
	{"exponent end", `1e`},
	{"exponent sign end", `1e+`},
	{"exponent letter", `1ex`},
	{"plus", `+1`},
	{"hex", `0x1`},
	{"tru", `tru`},
	{"trux", `trux`},
	{"nul", `nul`},
	{"falsy", `falsy`},
	{"True", `True`},
	{"nulll", `nulll`},
	{"open string", `"abc`},
	{"open escape", `"\`},
	{"bad escape", `"\x"`},
	{"short unicode", `"\u12"`},
	{"bad unicode", `"\u12g4"`},
	{"tab in string", "\"a\tb\""},
	{"newline in string", "\"a\nb\""},
	{"after value", `[1,2]x`},
	{"two objects", `{} {}`},
	{"two numbers", `1 2`},
	{"two strings", `"a" "b"`},
	{"extra close", `[1]]`},
	{"bom", "\xef\xbb\xbf{}"},
	{"single quotes", `'a'`},
	{"NaN", `NaN`},
	{"Infinity", `Infinity`},
	{"cut in element", `{"calls":[{"_tool":"a"},{"_tool":"b`},
	{"fence then cut", "```json\n{"},
	{"fence only", "```json\n"},
	{"fence open", "```"},
	{"two ticks", "``json\n{}"},
	{"tick in info", "```js`on\n{}"},
	{"closing fence alone", "{}\n```"},
	{"text after fence", "```\n{}\n```x"},
	{"second fence", "```\n{}\n```\n```"},
	{"short closing fence", "```\n{}\n``"},
	{"one tick after value", "```\n{}`"},
	{"fence after value start", "[```\n1]"},
}

// paths are the extraction paths every case is run with.
var paths = []string{"", "calls", "a", "0", "calls.0", "a.0"}

// TestAgainstEncodingJSON runs every case through the Extractor and the
// Decoder, whole, byte by byte and split at every offset, and checks that
// the outcome does not depend on the chunking and agrees with
// encoding/json on validity, elements, tokens and error.
func TestAgainstEncodingJSON(t *testing.T) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.in)
			for _, chunks := range chunkings(data) {
				for _, path := range paths {
					got := extract(t, path, chunks)
					checkAgainstJSON(t, data, path, got)
					if first := extract(t, path, [][]byte{data}); !cmp.Equal(got, first, errorsEqual) {
						t.Fatalf("chunks %q, path %q: %v; whole input: %v", chunks, path, got, first)
					}
				}
				toks, err := tokens(t, chunks, true)
				xerr := extract(t, "", chunks).Err
				if !cmp.Equal(err, xerr, errorsEqual) {
					t.Fatalf("chunks %q: Decoder error %v, Extractor error %v", chunks, err, xerr)
				}
				if err == nil {
					if diff := cmp.Diff(withoutPaths(toks), jsonTokens(t, unfence(data))); diff != "" {
						t.Fatalf("chunks %q: tokens (-got +want):\n%s", chunks, diff)
					}
				}
			}
		})
	}
}

// chunkings returns data whole, byte by byte, and split in two at every
// offset.
func chunkings(data []byte) [][][]byte {
	out := [][][]byte{{data}}
	var bytewise [][]byte
	for i := range data {
		bytewise = append(bytewise, data[i:i+1])
	}
	out = append(out, bytewise)
	for i := 0; i <= len(data); i++ {
		out = append(out, [][]byte{data[:i], data[i:]})
	}
	return out
}

// errorsEqual compares errors by value: two *SyntaxErrors are equal when
// their fields are.
var errorsEqual = cmp.Comparer(func(a, b error) bool {
	var sa, sb *SyntaxError
	if errors.As(a, &sa) && errors.As(b, &sb) {
		return *sa == *sb
	}
	return a == b
})

// TestSyntaxErrors checks the text, offset, path and cause of errors
// against testdata/syntax_errors.golden (go test -update rewrites it). The
// text reaches the LLM when a solution is malformed, so it must not drift.
func TestSyntaxErrors(t *testing.T) {
	inputs := []string{
		``,
		`{"calls":[{"_tool":"a"},{"_tool":"b`,
		`{"calls":[{"_tool":"a"},{"_tool":"b"`,
		`{"calls":[{"_tool":"a"},`,
		`{"calls":[{"_tool":"a"},]`,
		`{"calls":[{"_tool":"a","args":{"q":"x\y"}}]}`,
		`{"calls":[{"_tool":"a","args":{"n":01}}]}`,
		`{"calls":[{"_tool":"a"}}`,
		`{"calls":[1,2] "output":null}`,
		`{"calls":[tru]}`,
		`{"output":{"items":[1,2,-]}}`,
		`{"a" 1}`,
		`{"a":1,"b":2,}`,
		`{"a.b":{"c":[[1],[2,x]]}}`,
		`{"k\u0041y":[nul`,
		"{\"a\":\"\x01\"}",
		`[1] [2]`,
		"```json\n{\"calls\":[}\n```",
		"```json\n{\"calls\":[]}\n``",
		"``json",
		"{}\n```",
	}
	var b bytes.Buffer
	for _, in := range inputs {
		err := extract(t, "calls", [][]byte{[]byte(in)}).Err
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("%q: err = %v, want a *SyntaxError", in, err)
		}
		fmt.Fprintf(&b, "%s\n\tOffset=%d Path=%q EOF=%v\n\t%s\n", strconv.Quote(in), se.Offset, se.Path, errors.Is(err, io.ErrUnexpectedEOF), err)
	}
	golden := filepath.Join("testdata", "syntax_errors.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantText, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b.String(), string(wantText)); diff != "" {
		t.Errorf("errors (-got +want):\n%s", diff)
	}
}

// TestStringBytes puts each kind of special byte at every position of a
// long string, so that the 8-bytes-at-a-time search meets it at every
// alignment, and compares with encoding/json.
func TestStringBytes(t *testing.T) {
	for _, special := range []string{`"`, `\n`, `\"`, `\u00e9`, "\x01", "\x1f", "\x7f", "\xff", `\`} {
		for k := range 24 {
			in := `["` + strings.Repeat("a", k) + special + strings.Repeat("b", 24-k) + `"]`
			for _, chunks := range [][][]byte{{[]byte(in)}, {[]byte(in[:k/2+1]), []byte(in[k/2+1:])}} {
				checkAgainstJSON(t, []byte(in), "0", extract(t, "0", chunks))
			}
		}
	}
}
