package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// solution returns a realistic solution of exactly size bytes (at least
// 512): a "calls" array of small tool calls with strings (some escaped),
// numbers, nested objects and arrays, then an output whose note pads the
// text to size. It is deterministic.
func solution(size int) []byte {
	tools := []string{"search", "fetch_page", "summarize", "write_file"}
	langs := []string{"en", "de", "fr"}
	var b, call bytes.Buffer
	b.WriteString(`{"calls":[`)
	const end = `],"output":{"note":""}}`
	for i := 0; ; i++ {
		call.Reset()
		if i > 0 {
			call.WriteString(",\n  ")
		}
		n := strconv.Itoa(i)
		call.WriteString(`{"_tool":"`)
		call.WriteString(tools[i%len(tools)])
		call.WriteString(`","_outputPath":"†data.results.`)
		call.WriteString(n)
		call.WriteString(`","query":"find \"item `)
		call.WriteString(n)
		call.WriteString(`\" in the catalogue\nand report prices in \u20ac","limit":`)
		call.WriteString(strconv.Itoa(10 + i%90))
		call.WriteString(`,"score":0.`)
		call.WriteString(strconv.Itoa(1000 + i*37%9000))
		call.WriteString(`,"options":{"lang":"`)
		call.WriteString(langs[i%len(langs)])
		call.WriteString(`","safe":`)
		call.WriteString(strconv.FormatBool(i%2 == 0))
		call.WriteString(`,"tags":["a","b\/c","page-`)
		call.WriteString(n)
		call.WriteString(`"],"max":1.5e3,"prev":null}}`)
		if b.Len()+call.Len()+len(end) > size {
			break
		}
		b.Write(call.Bytes())
	}
	b.WriteString(end[:len(end)-3])
	b.WriteString(strings.Repeat("x", size-b.Len()-3))
	b.WriteString(end[len(end)-3:])
	return b.Bytes()
}

var benchSizes = []struct {
	name string
	size int
}{
	{"1KB", 1 << 10},
	{"100KB", 100 << 10},
	{"1MB", 1 << 20},
}

const benchChunk = 12

func BenchmarkStreamParse(b *testing.B) {
	for _, sz := range benchSizes {
		data := solution(sz.size)
		want := countCalls(b, data)
		b.Run("size="+sz.name+"/chunk="+strconv.Itoa(benchChunk), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				x, err := NewExtractor("calls")
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for off := 0; off < len(data); off += benchChunk {
					els, err := x.Feed(data[off:min(off+benchChunk, len(data))])
					if err != nil {
						b.Fatal(err)
					}
					got += len(els)
				}
				if _, err := x.End(); err != nil {
					b.Fatal(err)
				}
				if got != want {
					b.Fatalf("got %d elements, want %d", got, want)
				}
			}
		})
	}
}

// BenchmarkDecoderToken is the baseline: every token of the same input,
// read in the same chunks, with encoding/json's Decoder.Token and with this
// package's Decoder.Token.
func BenchmarkDecoderToken(b *testing.B) {
	for _, sz := range benchSizes {
		data := solution(sz.size)
		name := "size=" + sz.name + "/chunk=" + strconv.Itoa(benchChunk)
		b.Run(name+"/decoder=encoding_json", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d := json.NewDecoder(&chunkReader{data: data, n: benchChunk})
				for {
					_, err := d.Token()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(name+"/decoder=jsonstream", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				d := NewDecoder()
				for off := 0; off < len(data); off += benchChunk {
					d.Feed(data[off:min(off+benchChunk, len(data))])
					for {
						_, err := d.Token()
						if err == ErrNeedInput {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				d.End()
				for {
					_, err := d.Token()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// chunkReader returns data at most n bytes per Read, like a network stream.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// countCalls returns the number of elements of "calls" per encoding/json.
func countCalls(tb testing.TB, data []byte) int {
	tb.Helper()
	var v struct{ Calls []json.RawMessage }
	if err := json.Unmarshal(data, &v); err != nil {
		tb.Fatal(errors.Join(errors.New("bench input"), err))
	}
	return len(v.Calls)
}
