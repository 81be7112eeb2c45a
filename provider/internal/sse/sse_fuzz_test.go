package sse

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// FuzzDecoderAgainstSDK checks the Decoder against the OpenAI SDK's
// reader, which it replaces, on the streams both read alike: lines ended
// by LF (the SDK splits on LF and CRLF only), no error line outside the
// format (which the SDK drops) and no byte order mark first (which the
// SDK keeps). The SDK ends each data line with a newline and dispatches
// an event whose data is blank; the Decoder joins the lines and skips
// such an event, but for an error event, which the SDK skips.
func FuzzDecoderAgainstSDK(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata:{\"b\":2}\n\n",
		"event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n",
		"data: a\ndata: b\n\n",
		": keep-alive\nid: 7\nretry: 10\ndata: a\n\n",
		"data:\n\ndata:  \n\nevent: ping\n\ndata: a\n\n",
		"event: ping\n\ndata: a\n\n",
		"data: a\n\ndata: b",
		"data:  two spaces\nevent:x\ndata\n\n",
		"event: error\ndata: {\"error\":{\"message\":\"m\"}}\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(in, "\r") || strings.HasPrefix(in, "\ufeff") {
			return
		}
		for line := range strings.SplitSeq(in, "\n") {
			if ErrorLine([]byte(line)) {
				return
			}
		}
		var want []ev
		sdk := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(in))})
		for sdk.Next() {
			e := sdk.Event()
			data := bytes.TrimSuffix(e.Data, []byte("\n"))
			if len(bytes.TrimSpace(data)) == 0 {
				continue
			}
			want = append(want, ev{e.Type, string(data)})
		}
		if sdk.Err() != nil {
			return // a line past the SDK's limit
		}
		all, err := events(t, strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var got []ev
		for _, e := range all {
			if e.Type != "error" || strings.TrimSpace(e.Data) != "" {
				got = append(got, e)
			}
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("%q: events (-Decoder +SDK):\n%s", in, diff)
		}
	})
}
