package agent

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// A Registry keeps the first request of recent loops, prepared: runs of
// one agent start from the same context (its tools, instructions and
// data), and a chat's next turn starts from the last one's context with
// messages added. A loop whose context starts with a cached one forks it
// and handles only the messages past it (prepared.extend), which gives
// what handling the whole context would: only built-in handlers ran on
// the cached messages, and they read nothing but the Build and the log.

// startCacheSize bounds the first requests a Registry keeps.
const startCacheSize = 8

// start is a cached first request: prepared from the messages of prefix
// with a registry at version, for the LLM settings llm and the user's
// schema user. p is frozen: loops use forks of it.
type start struct {
	prefix  message.Prefix
	version uint64
	llm     provider.Request
	user    json.RawMessage
	p       *prepared
}

// matches reports whether s was prepared for the same settings.
func (s *start) matches(version uint64, llm *provider.Request, user json.RawMessage) bool {
	return s.version == version && bytes.Equal(s.user, user) && sameSettings(&s.llm, llm)
}

// sameSettings compares the settings of two requests, not their messages
// nor schema.
func sameSettings(a, b *provider.Request) bool {
	return a.Model == b.Model && a.N == b.N && a.Stream == b.Stream && a.MaxTokens == b.MaxTokens &&
		a.Thinking == b.Thinking && a.SchemaName == b.SchemaName &&
		(a.Temperature == nil) == (b.Temperature == nil) && (a.Temperature == nil || *a.Temperature == *b.Temperature)
}

// prepareStart prepares the first request of a loop over log, from the
// cached start that log extends the furthest when there is one.
func prepareStart(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log) (*prepared, error) {
	reg := cfg.Registry
	if reg == nil {
		reg = DefaultRegistry
	}
	version := reg.version.Load()
	llm := llmSettings(cfg)
	if s := reg.startFor(version, &llm, userSchema, log); s != nil {
		p := s.p.fork(log)
		if p.n == log.Len() {
			return p, nil
		}
		if q, ok, err := p.extend(ctx, log); ok {
			return q, err
		}
	}
	p, err := prepareFrom(ctx, cfg, userSchema, log, false, true)
	if err != nil || !p.carry {
		return p, err
	}
	// The loop goes on with a fork, the cache keeps p as it is now.
	f := p.fork(log)
	p.build.Log = nil // the loop's log: the cache holds its prefix only
	reg.keepStart(&start{prefix: log.Prefix(), version: version, llm: llm, user: userSchema, p: p})
	return f, nil
}

// startFor returns the cached start whose messages log extends the
// furthest, or nil.
func (r *Registry) startFor(version uint64, llm *provider.Request, user json.RawMessage, log *message.Log) *start {
	r.startsMu.Lock()
	cands := r.starts // compared without the lock
	r.startsMu.Unlock()
	var best *start
	for _, s := range cands {
		if s != nil && s.matches(version, llm, user) && (best == nil || s.prefix.Len() > best.prefix.Len()) &&
			s.prefix.Len() <= log.Len() && log.HasPrefix(s.prefix) {
			best = s
		}
	}
	return best
}

// keepStart caches s, replacing the oldest start.
func (r *Registry) keepStart(s *start) {
	r.startsMu.Lock()
	defer r.startsMu.Unlock()
	r.starts[r.startsAt] = s
	r.startsAt = (r.startsAt + 1) % startCacheSize
}

// fork returns a copy of p for a loop over log (see Build.fork).
func (p *prepared) fork(log *message.Log) *prepared {
	f := *p
	f.build = p.build.fork(log)
	return &f
}
