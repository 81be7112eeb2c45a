package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// This file holds the reference behaviour every test compares against:
// encoding/json on the whole input, plus the code fence this package skips.

// fenced matches input wrapped in the Markdown code fence that the package
// tolerates; group 1 is the JSON inside.
var fenced = regexp.MustCompile("(?s)^[ \t\r\n]*```[^`\n]*\n(.*?)(?:```[ \t\r\n]*)?$")

// unfence returns the JSON text of data: what is inside the code fence if
// there is one, else data.
func unfence(data []byte) []byte {
	if m := fenced.FindSubmatch(data); m != nil {
		return m[1]
	}
	return data
}

// result is what a run over some input produced.
type result struct {
	Elements []Element
	Err      error
}

// want is what encoding/json says about data: whether it is valid and, if
// so, the elements at path, compacted. ok is false when the elements are
// ambiguous because an object repeats a key (encoding/json keeps the last
// value, a stream hands over every one).
func want(t testing.TB, data []byte, path string) (valid bool, els []Element, ok bool) {
	t.Helper()
	js := unfence(data)
	if !json.Valid(js) {
		return false, nil, true
	}
	if hasDuplicateKeys(t, js) {
		return true, nil, false
	}
	v := json.RawMessage(js)
	var segs []string
	if path != "" {
		segs = strings.Split(path, ".")
	}
	for _, seg := range segs {
		switch firstByte(v) {
		case '{':
			var m map[string]json.RawMessage
			if err := json.Unmarshal(v, &m); err != nil {
				t.Fatal(err)
			}
			var found bool
			if v, found = m[seg]; !found {
				return true, nil, true
			}
		case '[':
			var a []json.RawMessage
			if err := json.Unmarshal(v, &a); err != nil {
				t.Fatal(err)
			}
			i := index(seg)
			if i < 0 || i >= len(a) {
				return true, nil, true
			}
			v = a[i]
		default:
			return true, nil, true
		}
	}
	if firstByte(v) != '[' {
		return true, []Element{{Index: -1, Path: path, Value: compact(t, v)}}, true
	}
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		t.Fatal(err)
	}
	for i, e := range a {
		p := strconv.Itoa(i)
		if path != "" {
			p = path + "." + p
		}
		els = append(els, Element{Index: i, Path: p, Value: compact(t, e)})
	}
	return true, els, true
}

func firstByte(v []byte) byte {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

func compact(t testing.TB, v []byte) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("compact %q: %v", v, err)
	}
	return b.Bytes()
}

// compacted returns els with their values compacted.
func compacted(t testing.TB, els []Element) []Element {
	if len(els) == 0 {
		return nil
	}
	out := make([]Element, len(els))
	for i, e := range els {
		out[i] = Element{Index: e.Index, Path: e.Path, Value: compact(t, e.Value)}
	}
	return out
}

// hasDuplicateKeys reports whether an object in valid JSON repeats a key
// (after decoding, as encoding/json compares map keys).
func hasDuplicateKeys(t testing.TB, js []byte) bool {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	type obj struct {
		keys   map[string]bool
		expect bool // the next string is a key
	}
	var stack []*obj
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("token: %v", err)
		}
		var top *obj
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, isString := tok.(string); isString && top != nil && top.expect {
			if top.keys[s] {
				return true
			}
			top.keys[s] = true
			top.expect = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &obj{keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &obj{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				top = stack[len(stack)-1]
			} else {
				top = nil
			}
		}
		if top != nil && top.keys != nil {
			top.expect = true // a member's value ended
		}
	}
}

// chunk splits data into pieces whose lengths are taken from cuts in turn,
// each modulo 17, so empty chunks occur too. No cuts, or only empty
// lengths, means one chunk.
func chunk(data, cuts []byte) [][]byte {
	if !slices.ContainsFunc(cuts, func(c byte) bool { return c%17 != 0 }) {
		return [][]byte{data}
	}
	var out [][]byte
	for k := 0; len(data) > 0; k++ {
		n := min(int(cuts[k%len(cuts)]%17), len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// extract runs an Extractor for path over chunks the way a caller that
// owns what it is handed may: each chunk is fed from one read buffer that
// is overwritten after every Feed, and each element is overwritten (see
// scribble) as soon as it has been recorded. At the end every element
// must still hold what was written into it. The result holds copies
// taken when the elements were handed over.
func extract(t testing.TB, path string, chunks [][]byte) result {
	t.Helper()
	x, err := NewExtractor(path)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	var handed []Element
	take := func(els []Element) {
		for _, e := range els {
			r.Elements = append(r.Elements, Element{Index: e.Index, Path: strings.Clone(e.Path), Value: bytes.Clone(e.Value)})
		}
		for _, e := range els {
			scribble(e, mark(len(handed)))
			handed = append(handed, e)
		}
	}
	defer func() {
		for k, e := range handed {
			if !scribbled(e, mark(k)) {
				t.Fatalf("element %d (%s) was changed after it was handed over: Path %q, Value %q", k, r.Elements[k].Value, e.Path, e.Value)
			}
		}
	}()
	var in []byte
	for _, c := range chunks {
		in = append(in[:0], c...)
		els, err := x.Feed(in)
		for i := range in {
			in[i] = '#'
		}
		take(els)
		if err != nil {
			if els2, err2 := x.End(); len(els2) != 0 || err2 != err {
				t.Fatalf("End after a Feed error = %v, %v; want nil, the same error", els2, err2)
			}
			r.Err = err
			return r
		}
	}
	els, err := x.End()
	take(els)
	r.Err = err
	return r
}

// mark is the byte scribble writes into the k-th element handed over.
func mark(k int) byte { return byte(k%255 + 1) }

// scribble overwrites every byte of e's Value with m. Path is a string,
// which no caller can write into, so only Value is checked.
func scribble(e Element, m byte) {
	for i := range e.Value {
		e.Value[i] = m
	}
}

// scribbled reports whether every byte of e's Value is m.
func scribbled(e Element, m byte) bool {
	return bytes.Count(e.Value, []byte{m}) == len(e.Value)
}

// tokens pulls every token from a Decoder fed with chunks, recording each
// with its path, and returns them and the final error (nil for io.EOF).
func tokens(t testing.TB, chunks [][]byte, useNumber bool) ([]string, error) {
	t.Helper()
	d := NewDecoder()
	if useNumber {
		d.UseNumber()
	}
	var toks []string
	pull := func() error {
		for {
			tok, err := d.Token()
			if err != nil {
				return err
			}
			toks = append(toks, tokenString(tok)+" @"+d.Path())
		}
	}
	for _, c := range chunks {
		d.Feed(c)
		if err := pull(); err != ErrNeedInput {
			return toks, err
		}
	}
	d.End()
	err := pull()
	if err == io.EOF {
		err = nil
	}
	return toks, err
}

// jsonTokens returns the tokens encoding/json's Decoder finds in valid js.
func jsonTokens(t testing.TB, js []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var toks []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return toks
		}
		if err != nil {
			t.Fatalf("encoding/json token: %v", err)
		}
		toks = append(toks, tokenString(tok))
	}
}

func tokenString(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return string(v)
	case string:
		return strconv.Quote(v)
	case json.Number:
		return "n:" + string(v)
	}
	b, _ := json.Marshal(tok)
	return string(b)
}

// withoutPaths strips the " @path" suffix tokens adds.
func withoutPaths(toks []string) []string {
	out := make([]string, len(toks))
	for i, s := range toks {
		out[i] = s[:strings.LastIndex(s, " @")]
	}
	return out
}

// checkAgainstJSON checks the result of a run over data (with chunks)
// against encoding/json: same validity, same elements, and an error that
// agrees with encoding/json's on offset and message.
func checkAgainstJSON(t *testing.T, data []byte, path string, got result) {
	t.Helper()
	valid, wantEls, ok := want(t, data, path)
	if valid != (got.Err == nil) {
		t.Fatalf("input %q: err = %v, but json.Valid = %v", data, got.Err, valid)
	}
	if !valid {
		var se *SyntaxError
		if !errors.As(got.Err, &se) {
			t.Fatalf("input %q: err = %v (%T), want a *SyntaxError", data, got.Err, got.Err)
		}
		checkSyntaxError(t, data, se)
		return
	}
	if ok {
		if diff := cmp.Diff(compacted(t, got.Elements), wantEls); diff != "" {
			t.Fatalf("input %q, path %q: elements (-got +want):\n%s", data, path, diff)
		}
	}
}

// checkSyntaxError compares se with the error json.Unmarshal reports for
// data, when data has no backquote (so no code fence is involved).
// encoding/json's Offset counts the offending byte; ours points at it.
func checkSyntaxError(t *testing.T, data []byte, se *SyntaxError) {
	t.Helper()
	if bytes.IndexByte(data, '`') >= 0 {
		return
	}
	var v any
	var je *json.SyntaxError
	if !errors.As(json.Unmarshal(data, &v), &je) {
		t.Fatalf("input %q: json.Unmarshal gives no SyntaxError", data)
	}
	if errors.Is(se, io.ErrUnexpectedEOF) {
		// encoding/json reports an input cut inside a number or literal
		// as a space that does not fit.
		eof := je.Error() == "unexpected end of JSON input" || strings.HasPrefix(je.Error(), "invalid character ' ' ")
		if !eof || je.Offset != int64(len(data)) || se.Offset != int64(len(data)) {
			t.Fatalf("input %q: got %v, but encoding/json says %q at offset %d", data, se, je, je.Offset)
		}
		return
	}
	if se.Offset != je.Offset-1 || se.Msg != je.Error() {
		t.Fatalf("input %q: got %q at offset %d, but encoding/json says %q at offset %d", data, se.Msg, se.Offset, je, je.Offset-1)
	}
}
