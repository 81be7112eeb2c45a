package jsonstream

import (
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecoderPath checks every token and its path for a solution fed in
// chunks of 5 bytes.
func TestDecoderPath(t *testing.T) {
	in := "```json\n" + `{"calls":[{"_tool":"a","args":{"q":"x","n":[1,2]}},{}],"output":null,"k\u0041":true}` + "\n```"
	var chunks [][]byte
	for i := 0; i < len(in); i += 5 {
		chunks = append(chunks, []byte(in[i:min(i+5, len(in))]))
	}
	got, err := tokens(t, chunks, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{ @`,
		`"calls" @calls`,
		`[ @calls`,
		`{ @calls.0`,
		`"_tool" @calls.0._tool`,
		`"a" @calls.0._tool`,
		`"args" @calls.0.args`,
		`{ @calls.0.args`,
		`"q" @calls.0.args.q`,
		`"x" @calls.0.args.q`,
		`"n" @calls.0.args.n`,
		`[ @calls.0.args.n`,
		`1 @calls.0.args.n.0`,
		`2 @calls.0.args.n.1`,
		`] @calls.0.args.n`,
		`} @calls.0.args`,
		`} @calls.0`,
		`{ @calls.1`,
		`} @calls.1`,
		`] @calls`,
		`"output" @output`,
		`null @output`,
		`"kA" @kA`,
		`true @kA`,
		`} @`,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("tokens (-got +want):\n%s", diff)
	}
}

// TestDecoderNeedInput walks a Decoder through a stream by hand.
func TestDecoderNeedInput(t *testing.T) {
	d := NewDecoder()
	next := func(wantTok json.Token, wantErr error) {
		t.Helper()
		tok, err := d.Token()
		if tok != wantTok || !errors.Is(err, wantErr) {
			t.Fatalf("Token() = %#v, %v; want %#v, %v", tok, err, wantTok, wantErr)
		}
	}
	next(nil, ErrNeedInput)
	d.Feed([]byte(` ["ab`))
	next(json.Delim('['), nil)
	next(nil, ErrNeedInput)
	d.Feed([]byte(`c", 1`))
	next("abc", nil)
	if got := d.InputOffset(); got != 7 {
		t.Errorf("InputOffset() = %d, want 7", got)
	}
	next(nil, ErrNeedInput) // 1 may go on: 12, 1.5, ...
	d.Feed([]byte(`2]`))
	next(12.0, nil)
	next(json.Delim(']'), nil)
	next(nil, ErrNeedInput) // white space or garbage may follow
	d.End()
	next(nil, io.EOF)
	next(nil, io.EOF)
}

func TestDecoderCut(t *testing.T) {
	d := NewDecoder()
	d.Feed([]byte(`{"a":[1,"b`))
	for {
		if _, err := d.Token(); err != nil {
			if err != ErrNeedInput {
				t.Fatal(err)
			}
			break
		}
	}
	d.End()
	_, err := d.Token()
	want := &SyntaxError{Offset: 10, Path: "a.1", Msg: "unexpected end of JSON input", Err: io.ErrUnexpectedEOF}
	if diff := cmp.Diff(err, error(want), errorsEqual); diff != "" {
		t.Fatalf("error (-got +want):\n%s", diff)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v does not wrap io.ErrUnexpectedEOF", err)
	}
	if _, err2 := d.Token(); err2 != err {
		t.Fatalf("error not sticky: %v", err2)
	}
}

func TestDecoderNumbers(t *testing.T) {
	for _, tt := range []struct {
		in        string
		useNumber bool
		want      json.Token
		wantErr   string
	}{
		{"-1.5e2", false, -150.0, ""},
		{"-1.5e2", true, json.Number("-1.5e2"), ""},
		{"1e400", true, json.Number("1e400"), ""},
		{"1e400", false, nil, "json: cannot unmarshal number 1e400 into Go value of type float64"},
	} {
		d := NewDecoder()
		if tt.useNumber {
			d.UseNumber()
		}
		d.Feed([]byte(tt.in))
		d.End()
		tok, err := d.Token()
		errText := ""
		if err != nil {
			errText = err.Error()
		}
		if tok != tt.want || errText != tt.wantErr {
			t.Errorf("%s (UseNumber %v): Token() = %#v, %q; want %#v, %q", tt.in, tt.useNumber, tok, errText, tt.want, tt.wantErr)
		}
		if _, err := d.Token(); err != io.EOF {
			t.Errorf("%s: then %v, want io.EOF", tt.in, err)
		}
	}
}

// TestDecoderMemory checks that a Decoder pulled after every chunk keeps
// only a few chunks' worth of bytes, and that a token cut across many
// chunks is kept whole.
func TestDecoderMemory(t *testing.T) {
	data := solution(1 << 20)
	d := NewDecoder()
	for off := 0; off < len(data); off += 12 {
		d.Feed(data[off:min(off+12, len(data))])
		for {
			_, err := d.Token()
			if err == ErrNeedInput {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if cap(d.buf) > 1024 {
			t.Fatalf("at offset %d: buffer of %d bytes", off, cap(d.buf))
		}
	}
	d.End()
	if _, err := d.Token(); err != io.EOF {
		t.Fatal(err)
	}
}

func TestDecoderFeedAfterEnd(t *testing.T) {
	d := NewDecoder()
	d.End()
	defer func() {
		if recover() == nil {
			t.Error("Feed after End did not panic")
		}
	}()
	d.Feed([]byte("1"))
}
