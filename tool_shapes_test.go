package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/schema"
)

// The cache hands back the shape made for the same name, definition and
// kind, and a new one when any of them differs.
func TestToolShapesByContent(t *testing.T) {
	var c toolShapes
	def := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"_output":{"type":"integer"}}}`)
	a, err := c.shape("a", def, false)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.shape("a", json.RawMessage(string(def)), false); again != a {
		t.Error("the same definition was shaped again")
	}
	b, _ := c.shape("b", def, false)
	if b == a || b.name != "b" || !json.Valid(b.llm) || string(b.llm) == string(a.llm) {
		t.Errorf("another name got %s", b.llm)
	}
	explicit, _ := c.shape("a", def, true)
	if explicit == a || explicit.result == nil || a.result != nil {
		t.Errorf("explicit %+v, latent %+v: an explicit tool's _output is its result", explicit, a)
	}
	if _, err := c.shape("bad", json.RawMessage(`[1]`), false); err == nil {
		t.Error("an array was shaped")
	}
}

// The caller's bytes are not kept: changing them after a run does not
// change the shape a later run gets for the old content.
func TestToolShapesCopyTheKey(t *testing.T) {
	var c toolShapes
	def := []byte(`{"type":"object","properties":{"x":{"type":"integer"}}}`)
	a, _ := c.shape("t", def, true)
	copy(def[len(`{"type":"object","properties":{"`):], "y")
	b, _ := c.shape("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`), true)
	if a != b {
		t.Fatal("the cached entry moved with the caller's bytes")
	}
	if string(a.def) != `{"type":"object","properties":{"x":{"type":"integer"}}}` {
		t.Errorf("the cached definition moved with the caller's bytes: %s", a.def)
	}
	y, _ := c.shape("t", def, true)
	if y == a || !json.Valid(y.check) || string(y.check) == string(a.check) {
		t.Errorf("the changed definition got %s", y.check)
	}
}

// A full cache starts over rather than growing without bound, and still
// answers correctly; concurrent runs share it safely.
func TestToolShapesBoundedAndConcurrent(t *testing.T) {
	var c toolShapes
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range schema.DefaultCacheSize + 50 {
				def := json.RawMessage(fmt.Sprintf(`{"type":"object","description":"%d","properties":{"x":{"type":"integer"}}}`, i))
				sh, err := c.shape("t", def, g%2 == 0)
				if err != nil {
					t.Error(err)
					return
				}
				if want := fmt.Sprintf(`"description":"%d"`, i); !json.Valid(sh.llm) || !strings.Contains(string(sh.llm), want) {
					t.Errorf("definition %d got %s", i, sh.llm)
					return
				}
			}
		})
	}
	wg.Wait()
	if c.n > schema.DefaultCacheSize {
		t.Errorf("the cache holds %d shapes, more than %d", c.n, schema.DefaultCacheSize)
	}
	// One definition under many names counts each.
	def := json.RawMessage(`{"type":"object"}`)
	for i := range 2 * schema.DefaultCacheSize {
		if sh, _ := c.shape(fmt.Sprint("t", i), def, false); sh.name != fmt.Sprint("t", i) {
			t.Fatalf("name t%d got %s", i, sh.name)
		}
	}
	if n := len(c.m[0][string(def)]); n > schema.DefaultCacheSize {
		t.Errorf("one definition holds %d shapes, more than %d", n, schema.DefaultCacheSize)
	}
}
