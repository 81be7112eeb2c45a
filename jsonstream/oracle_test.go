package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
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

// extract runs an Extractor for path over chunks. It checks each
// element's Offset and the Spans against the input, then clears the
// offsets so that results compare by value.
func extract(t testing.TB, path string, chunks [][]byte) result {
	t.Helper()
	x, err := NewExtractor(path)
	if err != nil {
		t.Fatal(err)
	}
	shared, _ := NewExtractor(path) // fed the same chunks with FeedShared: the same elements
	app, _ := NewExtractor(path)    // and with AppendShared, onto one slice
	// and, once Reset, by one that read other input before, to an error
	reused, _ := NewExtractor("calls")
	reused.Feed([]byte(`{"calls":[{"a":[1,{"b":"x`))
	reused.Feed([]byte(`]]`))
	if err := reused.Reset(path); err != nil {
		t.Fatal(err)
	}
	var sharedEls, appended, again []Element
	var r result
	defer func() {
		if !reflect.DeepEqual(sharedEls, r.Elements) {
			t.Fatalf("FeedShared gives %v, Feed %v", sharedEls, r.Elements)
		}
		if !reflect.DeepEqual(appended, sharedEls) {
			t.Fatalf("AppendShared gives %v, FeedShared %v", appended, sharedEls)
		}
		if !reflect.DeepEqual(again, sharedEls) {
			t.Fatalf("a Reset Extractor gives %v, a new one %v", again, sharedEls)
		}
		checkOffsets(t, x, bytes.Join(chunks, nil), r.Elements)
	}()
	for _, c := range chunks {
		els, err := x.Feed(c)
		sels, serr := shared.FeedShared(c)
		sharedEls = append(sharedEls, sels...)
		rels, rerr := reused.FeedShared(c)
		again = append(again, rels...)
		if (rerr == nil) != (serr == nil) || rerr != nil && rerr.Error() != serr.Error() {
			t.Fatalf("a Reset Extractor's error %v, a new one's %v", rerr, serr)
		}
		var aerr error
		if appended, aerr = app.AppendShared(appended, c); (aerr == nil) != (serr == nil) || aerr != nil && aerr.Error() != serr.Error() {
			t.Fatalf("AppendShared error %v, FeedShared error %v", aerr, serr)
		}
		if (serr == nil) != (err == nil) {
			t.Fatalf("FeedShared error %v, Feed error %v", serr, err)
		}
		r.Elements = append(r.Elements, els...)
		if err != nil {
			if els2, err2 := x.End(); len(els2) != 0 || err2 != err {
				t.Fatalf("End after a Feed error = %v, %v; want nil, the same error", els2, err2)
			}
			r.Err = err
			return r
		}
	}
	els, err := x.End()
	sels, _ := shared.End()
	sharedEls = append(sharedEls, sels...)
	aels, _ := app.End()
	appended = append(appended, aels...)
	rels, _ := reused.End()
	again = append(again, rels...)
	r.Elements = append(r.Elements, els...)
	r.Err = err
	return r
}

// checkOffsets checks that each element is at its Offset in input and
// each array element inside a span, that spans hold arrays in order, and
// clears the offsets.
func checkOffsets(t testing.TB, x *Extractor, input []byte, els []Element) {
	t.Helper()
	spans := x.Spans()
	for i, s := range spans {
		if s.Start < 0 || s.Start >= int64(len(input)) || input[s.Start] != '[' {
			t.Fatalf("span %d %+v does not start at a '[' of %q", i, s, input)
		}
		if s.End >= 0 && (s.End <= s.Start || input[s.End-1] != ']') || s.End < 0 && i < len(spans)-1 {
			t.Fatalf("span %d %+v does not end after a ']' of %q", i, s, input)
		}
		if i > 0 && (spans[i-1].End < 0 || spans[i-1].End > s.Start) {
			t.Fatalf("spans %+v overlap", spans)
		}
	}
	for i := range els {
		e := &els[i]
		end := e.Offset + int64(len(e.Value))
		if e.Offset < 0 || end > int64(len(input)) || !bytes.Equal(input[e.Offset:end], e.Value) {
			t.Fatalf("element %d %q is not at offset %d of %q", i, e.Value, e.Offset, input)
		}
		if e.Index >= 0 && !slices.ContainsFunc(spans, func(s Span) bool {
			return s.Start < e.Offset && (s.End < 0 || end < s.End)
		}) {
			t.Fatalf("element %d at %d is in no span of %+v", i, e.Offset, spans)
		}
		e.Offset = 0
	}
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
