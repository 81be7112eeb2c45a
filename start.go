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
	reg := cfg.registry()
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
	prefix := log.Prefix()
	if head := staticHead(log); head > 0 {
		// Keep the head too, for the runs that ask something else of the
		// same agent: prepare it, then go on from a fork of it.
		if p, err := prepareUpTo(ctx, cfg, userSchema, log, head, false, true); err == nil && p.carry {
			f := reg.keep(p, prefix.Head(head), version, llm, userSchema, log)
			if q, ok, err := f.extend(ctx, log); ok {
				if err != nil || !q.carry {
					return q, err
				}
				return reg.keep(q, prefix, version, llm, userSchema, log), nil
			}
		}
	}
	p, err := prepareFrom(ctx, cfg, userSchema, log, false, true)
	if err != nil || !p.carry {
		return p, err
	}
	return reg.keep(p, prefix, version, llm, userSchema, log), nil
}

// keep caches p, prepared from the messages of prefix, and returns a fork
// of it for the loop over log to go on with: the cache keeps p as it is
// now.
func (r *Registry) keep(p *prepared, prefix message.Prefix, version uint64, llm provider.Request, user json.RawMessage, log *message.Log) *prepared {
	f := p.fork(log)
	p.build.Log = nil // the loop's log: the cache holds its prefix only
	r.keepStart(&start{prefix: prefix.Freeze(), version: version, llm: llm, user: user, p: p})
	return f
}

// runLog returns a log holding msgs for a run. When msgs starts with the
// messages of a cached start, the longest such, the log shares them
// rather than copy them (see message.Prefix.NewLog): the start's prefix
// then also matches the log at a glance.
func (r *Registry) runLog(msgs []message.Message) (*message.Log, error) {
	r.startsMu.Lock()
	cands := r.starts
	r.startsMu.Unlock()
	for {
		k := -1 // the longest candidate left
		for i, s := range cands {
			if s != nil && s.prefix.Len() <= len(msgs) && (k < 0 || s.prefix.Len() > cands[k].prefix.Len()) {
				k = i
			}
		}
		if k < 0 {
			return message.NewLog(msgs...)
		}
		if log, ok, err := cands[k].prefix.NewLog(msgs...); ok {
			return log, err
		}
		cands[k] = nil
	}
}

// staticHead returns how many messages of log make its head, what runs
// of one agent share (its tools, and what comes before them), when the
// rest holds no data: a block rendered in the head shows the merged value
// of its identity over the whole log, so a head is only cached when that
// is the head's own. It returns 0 when there is no such head.
func staticHead(log *message.Log) int {
	i, typ := log.LastOf(message.TypeTool, message.TypeData)
	if typ == message.TypeData {
		return 0
	}
	head := i + 1 // 0 when there is no tool
	if head == log.Len() {
		return 0 // the whole context: cached as it is
	}
	return head
}

// startFor returns the cached start whose messages log extends the
// furthest, or nil.
func (r *Registry) startFor(version uint64, llm *provider.Request, user json.RawMessage, log *message.Log) *start {
	r.startsMu.Lock()
	cands := r.starts // compared without the lock
	r.startsMu.Unlock()
	n := log.Len()
	for { // the longest first: the first that log starts with is the one
		k := -1
		for i, s := range cands {
			if s != nil && s.prefix.Len() <= n && (k < 0 || s.prefix.Len() > cands[k].prefix.Len()) {
				k = i
			}
		}
		if k < 0 {
			return nil
		}
		if s := cands[k]; s.matches(version, llm, user) && log.HasPrefix(s.prefix) {
			return s
		}
		cands[k] = nil
	}
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
