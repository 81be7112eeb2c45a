package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// bodies sends each request through a fresh capture server and returns the
// bodies, split into their top-level fields.
func bodies(t *testing.T, reqs ...*provider.Request) []map[string]json.RawMessage {
	t.Helper()
	c := newCapture(t)
	p := c.provider(t, Config{Model: testModel})
	for _, req := range reqs {
		if _, err := provider.Collect(p.Generate(context.Background(), req)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]json.RawMessage
	for _, b := range c.bodies {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("body is not a JSON object: %v\n%s", err, b)
		}
		out = append(out, m)
	}
	return out
}

// TestImplicitCachePrefix: Gemini caches a repeated prompt prefix by
// itself, so the body must be the same bytes for the same request, and a
// step that appends messages must start its contents with the previous
// step's, under the same systemInstruction. The cache hints of the
// request change nothing in the body.
func TestImplicitCachePrefix(t *testing.T) {
	// The same request three times, and once more with the cache hints.
	hinted := fullRequest()
	for i := range hinted.Messages {
		hinted.Messages[i].Stable = i < 3
	}
	hinted.CacheKey = "run-01JD8X4Q6N"
	c := newCapture(t)
	p := c.provider(t, Config{})
	for _, req := range []*provider.Request{fullRequest(), fullRequest(), fullRequest(), hinted} {
		if _, err := provider.Collect(p.Generate(context.Background(), req)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	sent := append([][]byte(nil), c.bodies...)
	c.mu.Unlock()
	for i, b := range sent[1:] {
		if !bytes.Equal(b, sent[0]) {
			t.Errorf("body %d differs from body 0:\n%s\n%s", i+1, b, sent[0])
		}
	}

	// Two steps of a run: the second appends a tool result and an answer
	// request to the first, which ended with the model's turn.
	sys := []provider.Message{
		{Role: provider.RoleSystem, Text: "You are a travel agent."},
		{Role: provider.RoleSystem, Text: "## Data: city\n{\"name\":\"Paris\"}"},
	}
	step1 := append(append([]provider.Message(nil), sys...),
		provider.Message{Role: provider.RoleUser, Text: "Plan a day in Paris.", Stable: true},
		provider.Message{Role: provider.RoleAssistant, Text: `{"output":null,"calls":[{"_tool":"weather","city":"Paris"}]}`},
	)
	step2 := append(append([]provider.Message(nil), step1...),
		provider.Message{Role: provider.RoleUser, Text: "weather: sunny, 24°C", Stable: true},
		provider.Message{Role: provider.RoleUser, Text: "Answer now."},
	)
	got := bodies(t, &provider.Request{Messages: step1, CacheKey: "k"}, &provider.Request{Messages: step2, CacheKey: "k"})
	c1, c2 := got[0]["contents"], got[1]["contents"]
	prefix := bytes.TrimSuffix(c1, []byte("]"))
	if !bytes.HasPrefix(c2, prefix) || !bytes.HasPrefix(c2[len(prefix):], []byte(",")) {
		t.Errorf("step 2 contents do not start with step 1's:\n%s\n%s", c2, c1)
	}
	// The system messages are systemInstruction, the same in both steps;
	// the API puts it before the contents in the prompt, so it starts the
	// cached prefix.
	if !bytes.Equal(got[0]["systemInstruction"], got[1]["systemInstruction"]) {
		t.Errorf("systemInstruction differs between steps:\n%s\n%s", got[0]["systemInstruction"], got[1]["systemInstruction"])
	}
	var si wireContent
	if err := json.Unmarshal(got[1]["systemInstruction"], &si); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(si.Parts, []wirePart{{Text: sys[0].Text}, {Text: sys[1].Text}}); diff != "" {
		t.Errorf("systemInstruction parts (-got +want):\n%s", diff)
	}
	if strings.Contains(string(c2), sys[0].Text) {
		t.Errorf("a system message is in the contents: %s", c2)
	}
	for _, b := range got {
		for k := range b {
			if k != "contents" && k != "systemInstruction" && k != "generationConfig" {
				t.Errorf("unexpected field %q in the body", k)
			}
		}
	}
}
