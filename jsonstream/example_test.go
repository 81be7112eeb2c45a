package jsonstream_test

import (
	"fmt"
	"io"
	"iter"

	"github.com/augceo/agent/jsonstream"
)

// stream stands for a provider's response: the text of a solution arriving
// in small pieces.
func stream(text string, size int) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for i := 0; i < len(text); i += size {
			fmt.Printf("read %q\n", text[i:min(i+size, len(text))])
			if !yield([]byte(text[i:min(i+size, len(text))]), nil) {
				return
			}
		}
	}
}

// Each call is handed over as soon as its closing brace has arrived, while
// the rest of the solution is still streaming.
func ExampleElements() {
	solution := "```json\n" + `{"calls":[{"_tool":"search","q":"go"},{"_tool":"fetch","url":"x"}],"output":null}` + "\n```"
	for call, err := range jsonstream.Elements("calls", stream(solution, 24)) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%s = %s\n", call.Path, call.Value)
	}
	// Output:
	// read "```json\n{\"calls\":[{\"_too"
	// read "l\":\"search\",\"q\":\"go\"},{\""
	// calls.0 = {"_tool":"search","q":"go"}
	// read "_tool\":\"fetch\",\"url\":\"x\""
	// read "}],\"output\":null}\n```"
	// calls.1 = {"_tool":"fetch","url":"x"}
}

// An Extractor is pushed chunks from a loop the caller already has.
func ExampleExtractor() {
	x, err := jsonstream.NewExtractor("output.items")
	if err != nil {
		panic(err)
	}
	for _, chunk := range []string{`{"output":{"items":[1,`, `{"a":2},"th`, `ree"]}`} {
		items, err := x.Feed([]byte(chunk))
		for _, item := range items {
			fmt.Println(item.Index, string(item.Value))
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// The stream stops before the closing brace.
	if _, err := x.End(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0 1
	// 1 {"a":2}
	// 2 "three"
	// jsonstream: offset 39, path "output": unexpected end of JSON input
}

func ExampleDecoder_Token() {
	d := jsonstream.NewDecoder()
	for _, chunk := range []string{`{"calls":[{"_to`, `ol":"search"}],"output"`, `:null}`} {
		d.Feed([]byte(chunk))
		for {
			tok, err := d.Token()
			if err == jsonstream.ErrNeedInput {
				break // wait for the next chunk
			}
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%-8v at %q\n", tok, d.Path())
		}
	}
	d.End()
	if _, err := d.Token(); err != io.EOF {
		fmt.Println(err)
	}
	// Output:
	// {        at ""
	// calls    at "calls"
	// [        at "calls"
	// {        at "calls.0"
	// _tool    at "calls.0._tool"
	// search   at "calls.0._tool"
	// }        at "calls.0"
	// ]        at "calls"
	// output   at "output"
	// <nil>    at "output"
	// }        at ""
}
