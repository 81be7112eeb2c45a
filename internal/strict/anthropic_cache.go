package strict

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// The prompt cache of Anthropic's Messages API, as its documentation
// describes it. A request's prefix runs tools → system → messages, a block
// at a time; a block with cache_control is a breakpoint. At each
// breakpoint the API looks for an entry an earlier request wrote, at the
// breakpoint itself or at a block boundary up to AnthropicCacheLookback
// blocks before it, and reads the longest it finds; then it writes an entry
// at every breakpoint. Prefixes shorter than AnthropicMinCacheTokens are
// neither read nor written. A change to the model or the output format
// starts a new cache; one to the tool choice or the thinking settings
// keeps the entries of the tools and the system, not the messages'.
//
// An entry lasts the ttl of the breakpoint that wrote it (5 minutes, or
// "1h"), and each read keeps it that long again; a breakpoint may not
// follow one whose ttl is shorter. The server's clock only moves by
// [Server.Advance].
const (
	// AnthropicMaxBreakpoints is the most blocks with cache_control a
	// request may have.
	AnthropicMaxBreakpoints = 4
	// AnthropicCacheLookback is how many blocks before a breakpoint the
	// API checks for an entry.
	AnthropicCacheLookback = 20
	// AnthropicMinCacheTokens is the shortest prefix cached (Claude Sonnet
	// and Opus models).
	AnthropicMinCacheTokens = 1024
)

// Cache is what a request read from and wrote to the provider's prompt
// cache, in tokens (estimated as a token per four bytes of the blocks).
// WriteHour is the part of Write in entries that last an hour.
type Cache struct {
	Input, Read, Write, WriteHour int
}

// anthropicCache is the entries written by a server's requests: the hashes
// of the prefixes that end at a breakpoint, and when each expires, on the
// server's clock.
type anthropicCache map[[32]byte]entry

type entry struct {
	expires time.Duration
	ttl     time.Duration
}

// cacheBlock is one block of a request's prefix.
type cacheBlock struct {
	hash   [32]byte      // of the prefix up to and including this block
	tokens int           // of the prefix up to and including this block
	ttl    time.Duration // a breakpoint's; 0 for a block without cache_control
}

// breakpoint reports whether b has cache_control.
func (b cacheBlock) breakpoint() bool { return b.ttl > 0 }

// anthropicBlocks returns the blocks of a Messages API request body.
func anthropicBlocks(body []byte) ([]cacheBlock, error) {
	var in struct {
		Model        json.RawMessage   `json:"model"`
		ToolChoice   json.RawMessage   `json:"tool_choice"`
		Thinking     json.RawMessage   `json:"thinking"`
		OutputConfig json.RawMessage   `json:"output_config"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, part := range [][]byte{in.Model, in.OutputConfig} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	var blocks []cacheBlock
	tokens := 0
	add := func(raw json.RawMessage, role string) error {
		var block map[string]any
		if err := json.Unmarshal(raw, &block); err != nil {
			return err
		}
		var b cacheBlock
		if cc, ok := block["cache_control"]; ok {
			ttl, err := cacheTTL(cc)
			if err != nil {
				return err
			}
			b.ttl = ttl
		}
		delete(block, "cache_control")
		key, _ := json.Marshal(block) // keys sorted: the same block, the same key
		fmt.Fprintf(h, "%s:%d:%s", role, len(key), key)
		tokens += (len(key) + 3) / 4
		copy(b.hash[:], h.Sum(nil))
		b.tokens = tokens
		blocks = append(blocks, b)
		return nil
	}
	// content returns the blocks of a system or a message's content, which
	// may be a plain string.
	content := func(raw json.RawMessage) ([]json.RawMessage, error) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
			return []json.RawMessage{b}, nil
		}
		var list []json.RawMessage
		err := json.Unmarshal(raw, &list)
		return list, err
	}
	for _, t := range in.Tools {
		if err := add(t, "tool"); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	if len(in.System) > 0 {
		list, err := content(in.System)
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		for _, b := range list {
			if err := add(b, "system"); err != nil {
				return nil, fmt.Errorf("system: %w", err)
			}
		}
	}
	for _, part := range [][]byte{in.ToolChoice, in.Thinking} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	for i, m := range in.Messages {
		list, err := content(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages.%d.content: %w", i, err)
		}
		for _, b := range list {
			if err := add(b, m.Role); err != nil {
				return nil, fmt.Errorf("messages.%d.content: %w", i, err)
			}
		}
	}
	// The API refuses an entry meant to outlive one before it.
	var shorter time.Duration
	for _, b := range blocks {
		if !b.breakpoint() {
			continue
		}
		if shorter > 0 && b.ttl > shorter {
			return nil, fmt.Errorf("a ttl='%s' cache_control block must not come after a ttl='%s' cache_control block", ttlName(b.ttl), ttlName(shorter))
		}
		shorter = b.ttl
	}
	return blocks, nil
}

// cacheTTL returns the lifetime a cache_control asks for.
func cacheTTL(cc any) (time.Duration, error) {
	m, ok := cc.(map[string]any)
	if !ok || m["type"] != "ephemeral" {
		return 0, fmt.Errorf("cache_control: Input should be an object with type 'ephemeral'")
	}
	for k := range m {
		if k != "type" && k != "ttl" {
			return 0, fmt.Errorf("cache_control.%s: Extra inputs are not permitted", k)
		}
	}
	switch ttl, ok := m["ttl"]; {
	case !ok || ttl == "5m":
		return 5 * time.Minute, nil
	case ttl == "1h":
		return time.Hour, nil
	}
	return 0, fmt.Errorf("cache_control.ttl: Input should be '5m' or '1h'")
}

func ttlName(d time.Duration) string {
	if d == time.Hour {
		return "1h"
	}
	return "5m"
}

// breakpoints returns the indexes of the blocks with cache_control.
func breakpoints(blocks []cacheBlock) []int {
	var bps []int
	for i, b := range blocks {
		if b.breakpoint() {
			bps = append(bps, i)
		}
	}
	return bps
}

// read returns the last of blocks that an entry of the cache ends at,
// as the API looks for one at each breakpoint at time now; -1 for none.
// The entry read is kept for its ttl again.
func (c anthropicCache) read(blocks []cacheBlock, now time.Duration) int {
	read := -1
	for _, bp := range breakpoints(blocks) {
		for j := bp; j >= 0 && j >= bp-AnthropicCacheLookback; j-- {
			if e, ok := c[blocks[j].hash]; ok && e.expires > now {
				read = max(read, j)
				break
			}
		}
	}
	if read >= 0 {
		e := c[blocks[read].hash]
		e.expires = now + e.ttl
		c[blocks[read].hash] = e
	}
	return read
}

// write writes the entries of a request's breakpoints, the request having
// read blocks up to read, and returns its input tokens as the API bills
// them. The API makes the entries available once the response begins: a
// request that arrived before then did not find them.
func (c anthropicCache) write(blocks []cacheBlock, read int, now time.Duration) Cache {
	total := 0
	if n := len(blocks); n > 0 {
		total = blocks[n-1].tokens
	}
	var u Cache
	if read >= 0 {
		u.Read = blocks[read].tokens
	}
	written := u.Read
	for _, bp := range breakpoints(blocks) {
		b := blocks[bp]
		if b.tokens < AnthropicMinCacheTokens {
			continue
		}
		// An entry written again lasts the longer of its lifetimes.
		e := c[b.hash]
		c[b.hash] = entry{expires: max(e.expires, now+b.ttl), ttl: max(e.ttl, b.ttl)}
		if bp > read && b.tokens > written {
			// The tokens since the entry before are written to last
			// as long as this one.
			if b.ttl == time.Hour {
				u.WriteHour += b.tokens - written
			}
			written = b.tokens
		}
	}
	u.Write = written - u.Read
	u.Input = total - written
	return u
}
