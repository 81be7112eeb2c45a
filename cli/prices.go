package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/provider"
)

// A price is what a model's tokens cost, in US dollars per million
// tokens, one price per field of provider.Usage. Input and Output are
// required. CachedInput (tokens read from the prompt cache) and CacheWrite
// (tokens written to it) default to Input, CacheWriteLong (those written
// for a long retention, Anthropic's hour) to CacheWrite, and Thinking to
// Output: a provider that charges otherwise says so.
type price struct {
	Input          *float64 `json:"input"`
	CachedInput    *float64 `json:"cachedInput"`
	CacheWrite     *float64 `json:"cacheWrite"`
	CacheWriteLong *float64 `json:"cacheWriteLong"`
	Output         *float64 `json:"output"`
	Thinking       *float64 `json:"thinking"`
}

// cost is what u costs at p, in US dollars.
func (p *price) cost(u provider.Usage) float64 {
	or := func(v, def *float64) float64 {
		if v != nil {
			return *v
		}
		return *def
	}
	write := or(p.CacheWrite, p.Input)
	return (float64(u.Input)**p.Input +
		float64(u.CacheRead)*or(p.CachedInput, p.Input) +
		float64(u.CacheWrite-u.CacheWriteLong)*write +
		float64(u.CacheWriteLong)*or(p.CacheWriteLong, &write) +
		float64(u.Output)**p.Output +
		float64(u.Thinking)*or(p.Thinking, p.Output)) / 1e6
}

// prices is a price list read with --prices (or ACTS_PRICES): a JSON
// object from model names to prices. A name is exact ("gpt-5-mini",
// "openai:gpt-5-mini") or a prefix pattern ending in "*" ("gpt-4o*",
// "ollama:*", "*").
type prices struct {
	file     string
	exact    map[string]*price
	patterns []pattern // longest prefix first
}

type pattern struct {
	prefix string
	price  *price
}

// loadPrices reads a price list; an empty file name is no list.
func loadPrices(file string) (*prices, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	l, err := parsePrices(data)
	if err != nil {
		return nil, fmt.Errorf("--prices %s: %w", file, err)
	}
	l.file = file
	return l, nil
}

func parsePrices(data []byte) (*prices, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); errors.As(err, new(*json.SyntaxError)) {
		return nil, jsonfast.WithPosition(data, err)
	} else if err != nil || top == nil {
		return nil, errors.New(`a price list is a JSON object of model names to prices, e.g. {"gpt-5-mini": {"input": 0.25, "cachedInput": 0.025, "output": 2}}`)
	}
	l := &prices{exact: map[string]*price{}}
	for name, raw := range top {
		p, err := parsePrice(name, raw)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		if prefix, ok := strings.CutSuffix(name, "*"); ok {
			l.patterns = append(l.patterns, pattern{prefix, p})
		} else {
			l.exact[name] = p
		}
	}
	slices.SortFunc(l.patterns, func(a, b pattern) int {
		return cmp.Or(cmp.Compare(len(b.prefix), len(a.prefix)), strings.Compare(a.prefix, b.prefix))
	})
	return l, nil
}

func parsePrice(name string, raw json.RawMessage) (*price, error) {
	if strings.Contains(strings.TrimSuffix(name, "*"), "*") {
		return nil, errors.New(`"*" may only end a name`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p price
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p.Input == nil || p.Output == nil {
		return nil, errors.New(`"input" and "output" are required`)
	}
	for field, v := range map[string]*float64{"input": p.Input, "cachedInput": p.CachedInput, "cacheWrite": p.CacheWrite, "cacheWriteLong": p.CacheWriteLong, "output": p.Output, "thinking": p.Thinking} {
		if v != nil && *v < 0 {
			return nil, fmt.Errorf("%q is negative", field)
		}
	}
	return &p, nil
}

// lookup finds the price of a model named provider:model (or a bare
// model name): an exact entry for provider:model, else one for the bare
// model, else the longest pattern that matches either.
func (l *prices) lookup(model string) (*price, bool) {
	bare := model
	if _, m, ok := strings.Cut(model, ":"); ok {
		bare = m
	}
	for _, name := range []string{model, bare} {
		if p, ok := l.exact[name]; ok {
			return p, true
		}
	}
	for _, pt := range l.patterns {
		if strings.HasPrefix(model, pt.prefix) || strings.HasPrefix(bare, pt.prefix) {
			return pt.price, true
		}
	}
	return nil, false
}

// cost prices the usage of a model. With no list it reports false, and
// so it does for a model the list has no price for, unless u is empty.
func (l *prices) cost(model string, u provider.Usage) (float64, bool) {
	if l == nil {
		return 0, false
	}
	p, ok := l.lookup(model)
	switch {
	case ok:
		return p.cost(u), true
	case u.Total() == 0:
		return 0, true
	}
	return 0, false
}

// costText is the cost of a model's usage for people: "" with no list.
func (l *prices) costText(model string, u provider.Usage) string {
	if l == nil {
		return ""
	}
	if c, ok := l.cost(model, u); ok {
		return fmt.Sprintf("cost $%.4f", c)
	}
	return fmt.Sprintf("cost unknown: %s has no price for %q", l.file, model)
}
