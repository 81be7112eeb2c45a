package jsonstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fuzzPaths are the extraction paths the fuzzer picks from.
var fuzzPaths = []string{"", "calls", "output", "output.items", "calls.0", "calls.1.args", "0", "a", "a.b", "0.0"}

// FuzzStreamParse feeds arbitrary bytes, cut into arbitrary chunks, to an
// Extractor and a Decoder, and checks them against encoding/json on the
// whole input: the same inputs are valid (once a code fence is taken
// off), the elements at the path are the values json.Unmarshal finds
// there, the tokens are those of json.Decoder, errors have encoding/json's
// offset and message, the chunking changes nothing, and every element
// owns its memory (see extract).
func FuzzStreamParse(f *testing.F) {
	for _, tt := range cases {
		f.Add([]byte(tt.in), []byte{3, 1, 4, 1, 5}, uint8(1))
	}
	for _, s := range []string{
		`{"calls":[{"_tool":"search","query":"go \"iter\" \u00e9","limit":5,"_outputPath":"†data.results"},` +
			`{"_tool":"fetch","url":"https://example.com/a?b=1\u0026c=2","headers":{"accept":["text/html"]}}],"output":null}`,
		`{"output":{"answer":"42","items":[1,-2.5e-3,{"n":null},[true,false]]},"calls":[]}`,
		"```json\n" + `{"calls":[{"_tool":"write_file","path":"a\\b.txt","content":"line 1\nline 2\t\"q\""}],` +
			`"meta":{"identity":"agent","version":3},"advisors":[{"name":"critic","weight":0.5}],"output":null}` + "\n```\n",
		`{"calls":[{"_tool":"plan","calls":[{"_tool":"a"},{"_tool":"b","deps":["†a.x"]}]}],"output":{"items":[]}}`,
		`[[1,[2,[3]]],{"b":[4]},"\ud83d\ude00"]`,
		`{"a":{"b":[{"c":1}],"b":[2]}}`,
	} {
		for sel := range len(fuzzPaths) {
			f.Add([]byte(s), []byte{12}, uint8(sel))
		}
		f.Add([]byte(s[:len(s)/2]), []byte{5, 0, 9}, uint8(1))
	}
	f.Add(solution(2<<10), []byte{12}, uint8(1))

	f.Fuzz(func(t *testing.T, data, cuts []byte, sel uint8) {
		path := fuzzPaths[int(sel)%len(fuzzPaths)]
		chunks := chunk(data, cuts)
		got := extract(t, path, chunks)
		checkAgainstJSON(t, data, path, got)
		if whole := extract(t, path, [][]byte{data}); !cmp.Equal(got, whole, errorsEqual) {
			t.Fatalf("chunks %q, path %q: got %v; whole input gives %v", chunks, path, got, whole)
		}
		toks, err := tokens(t, chunks, true)
		if !cmp.Equal(err, got.Err, errorsEqual) {
			t.Fatalf("chunks %q: Decoder error %v, Extractor error %v", chunks, err, got.Err)
		}
		if err == nil {
			if diff := cmp.Diff(withoutPaths(toks), jsonTokens(t, unfence(data))); diff != "" {
				t.Fatalf("chunks %q: tokens (-got +want):\n%s", chunks, diff)
			}
		}
	})
}
