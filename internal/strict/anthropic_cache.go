package strict

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
type Cache struct {
	Input, Read, Write int
}

// anthropicCache is the entries written by a server's requests: the hashes
// of the prefixes that end at a breakpoint.
type anthropicCache map[[32]byte]bool

// cacheBlock is one block of a request's prefix.
type cacheBlock struct {
	hash       [32]byte // of the prefix up to and including this block
	tokens     int      // of the prefix up to and including this block
	breakpoint bool
}

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
		_, bp := block["cache_control"]
		delete(block, "cache_control")
		key, _ := json.Marshal(block) // keys sorted: the same block, the same key
		fmt.Fprintf(h, "%s:%d:%s", role, len(key), key)
		tokens += (len(key) + 3) / 4
		var b cacheBlock
		copy(b.hash[:], h.Sum(nil))
		b.tokens, b.breakpoint = tokens, bp
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
	return blocks, nil
}

// breakpoints returns the indexes of the blocks with cache_control.
func breakpoints(blocks []cacheBlock) []int {
	var bps []int
	for i, b := range blocks {
		if b.breakpoint {
			bps = append(bps, i)
		}
	}
	return bps
}

// read returns the last of blocks that an entry of the cache ends at, as
// the API looks for one at each breakpoint; -1 for none.
func (c anthropicCache) read(blocks []cacheBlock) int {
	read := -1
	for _, bp := range breakpoints(blocks) {
		for j := bp; j >= 0 && j >= bp-AnthropicCacheLookback; j-- {
			if c[blocks[j].hash] {
				read = max(read, j)
				break
			}
		}
	}
	return read
}

// write writes the entries of a request's breakpoints, the request having
// read blocks up to read, and returns its input tokens as the API bills
// them. The API makes the entries available once the response begins: a
// request that arrived before then did not find them.
func (c anthropicCache) write(blocks []cacheBlock, read int) Cache {
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
		if blocks[bp].tokens >= AnthropicMinCacheTokens {
			c[blocks[bp].hash] = true
			if bp > read {
				written = blocks[bp].tokens
			}
		}
	}
	u.Write = written - u.Read
	u.Input = total - written
	return u
}
