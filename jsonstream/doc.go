// Package jsonstream reads a JSON value that arrives in chunks, such as an
// LLM's solution streamed from a provider, and hands over each completed
// element at a path while the rest is still arriving. This is what lets
// the runtime start the calls of a solution {"calls":[...],"output":...}
// one by one, before the model has finished writing the last one.
//
//	x, err := jsonstream.NewExtractor("calls")
//	if err != nil { ... }
//	for chunk := range chunks { // as the provider streams them
//		els, err := x.Feed(chunk)
//		for _, el := range els {
//			start(el.Index, el.Value) // el.Value is the raw JSON of calls[el.Index]
//		}
//		if err != nil { ... } // a *SyntaxError
//	}
//	if _, err := x.End(); err != nil { ... } // wraps io.ErrUnexpectedEOF if cut short
//
// [Elements] does the same as an iter.Seq2 over an iter.Seq2 of chunks.
// Under both sits [Decoder], a pull tokenizer shaped like
// [encoding/json.Decoder.Token] that is fed chunks and never blocks: it
// returns [ErrNeedInput] when the bytes so far hold no complete token, and
// knows the path of every token ([Decoder.Path]).
//
// # Why a hand-written scanner
//
// No maintained Go library extracts elements incrementally from a stream
// that is pushed in chunks. Re-parsing the whole buffer on each chunk
// costs O(n²) in the length of the answer. encoding/json's Decoder.Token
// is incremental but blocks on an io.Reader, allocates for every token and
// is far too slow: about 15 MB/s on a solution fed in 12-byte chunks, where
// extracting the calls of 100 KB should take under 1 ms. So this package scans bytes itself, with
// a resumable state machine: each byte is looked at once, whatever the
// chunking, and the only bytes kept are those of the element being
// captured (copied a chunk slice at a time), the keys of the open objects
// and a few words per open container. docs/PERFORMANCE.md in the
// repository has the figures: about ten times faster than Decoder.Token.
//
// # What is accepted
//
// Exactly one JSON value, validated as encoding/json validates it
// ([encoding/json.Valid]): strings with their escapes (invalid UTF-8 is let
// through, as encoding/json does), the number grammar, true, false and
// null, commas and colons, matching delimiters. White space may surround
// it. Because models sometimes wrap their JSON in Markdown, a code fence
// is skipped: if the input starts (after white space) with "```" and an
// info string such as "json" up to a newline, that line is ignored, and
// a closing "```" after the value is allowed (and may be missing). Any
// other input is a [*SyntaxError] with the byte offset and the path where
// it went wrong; input that ends before the value is complete is a
// *SyntaxError wrapping [io.ErrUnexpectedEOF].
package jsonstream
