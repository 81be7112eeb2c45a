package agent

import (
	"context"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// DefaultCompactAt is the estimated size of a run's rendered context, in
// tokens, past which a loop compacts it when Config.CompactAt is 0: room
// for the answer and more steps in a 128K-token window.
const DefaultCompactAt = 100_000

// Lazy compaction (801). Under RenderCached a run's rendered context only
// grows. When it passes Config.CompactAt, the loop appends a compaction
// message to the log, and its handler folds what the model sees of the
// messages before it into a snapshot: the text messages, each data
// identity once as its current value, the last plan and the errors after
// it. Rendering goes on appending after the snapshot, which stays stable
// in its turn: the cache misses once, at the compaction. The log loses
// nothing, and since the marker is in the log, rendering the log again
// (a resumed or forked run) compacts at the same place.

// estimateTokens is the size of a request in tokens, at four bytes a
// token: enough to decide when to compact.
func estimateTokens(p *prepared) int {
	return (len(p.composed) + p.build.rendered) / 4
}

// compactNow reports whether a loop compacts request p, given its limit:
// when p is past the limit, unless its last compaction (Build.compacted,
// which the log determines, so a resumed run decides alike) left the
// messages within half the limit of their size now. Compacting again
// would then gain little, and each compaction costs the prompt cache.
func compactNow(p *prepared, limit int) bool {
	return estimateTokens(p) > max(limit, len(p.composed)/4+p.build.compacted+limit/2)
}

// compactAt returns the size past which a loop compacts, or 0 for never.
func compactAt(cfg *Config) int {
	switch {
	case cfg.Rendering == RenderSnapshot || cfg.CompactAt < 0:
		return 0
	case cfg.CompactAt == 0:
		return DefaultCompactAt
	}
	return cfg.CompactAt
}

// folded is what a Build's compactions folded of the log so far, so
// that each compaction reads only the messages since the last one: the
// snapshot's entries in log order, each a message as rendered or a data
// identity, rendered with its value at each compaction.
type folded struct {
	entries []foldEntry
	upTo    int                       // the messages of the log folded
	shown   map[message.Identity]bool // the data identities among entries
	last    []int                     // the entries of the last plan and the errors after it
	plan    []string                  // the calls of the last plan folded, compact
	notes   advisorNotes              // what the advisors folded said for all
}

type foldEntry struct {
	msg  provider.Message
	id   *message.Identity // a data identity
	last bool              // a plan, or an error
	dead bool              // a plan or error a later plan replaced
}

// fold adds the messages of the log before the one being handled that
// the last fold has not read.
func (f *folded) fold(b *Build) error {
	if f.shown == nil {
		f.shown = map[message.Identity]bool{}
	}
	for i := f.upTo; i < b.Index; i++ {
		if own, ok := b.own[i]; ok { // a handler of the user's rendered it
			for _, m := range own {
				f.entries = append(f.entries, foldEntry{msg: m})
			}
			continue
		}
		if typ, id := b.Log.IdentityAt(i); typ == message.TypeData { // most of a log: not copied
			if !f.shown[id] {
				f.shown[id] = true
				f.entries = append(f.entries, foldEntry{id: &id})
			}
			continue
		}
		m := b.Log.At(i)
		e := foldEntry{msg: provider.Message{Role: provider.RoleUser}}
		switch m.Type {
		case message.TypeText:
			e.msg = provider.Message{Role: provider.Role(m.Role), Text: m.Text}
		case message.TypePlan:
			// Only the last plan shows, and the errors after it.
			for _, k := range f.last {
				f.entries[k].dead = true
			}
			f.last = f.last[:0]
			f.plan = planCalls(m.Plan)
			shown := make([]string, len(f.plan))
			for k, c := range f.plan {
				shown[k] = shownCall(c, false)
			}
			e.msg.Text, e.last = "## Plan\n"+planIntro+"\n"+planLines(shown, m.Plan), true
		case message.TypeError:
			// In full: the snapshot shows data as it is now, where a
			// later write may hide what a failure branch took.
			e.msg.Text, e.last = errorText(&m, f.plan, nil), true
		case message.TypeMeta:
			e.msg.Text = metaText(&m)
		case message.TypeAdvisor:
			a, _, err := b.advisorOf(&m)
			if err != nil {
				return err
			}
			e.msg.Text = f.notes.text(a)
		default:
			continue
		}
		if e.last {
			f.last = append(f.last, len(f.entries))
		}
		f.entries = append(f.entries, e)
	}
	f.upTo = b.Index
	// Drop what later plans replaced, so that the entries stay those of
	// the snapshot.
	live := f.entries[:0]
	f.last = f.last[:0]
	for _, e := range f.entries {
		if e.dead {
			continue
		}
		if e.last {
			f.last = append(f.last, len(live))
		}
		live = append(live, e)
	}
	f.entries = live
	return nil
}

// renderCompaction folds the rendered messages before m into a snapshot
// (see above); under RenderSnapshot, which renders a snapshot anyway, it
// does nothing. The snapshot is the last one's with the messages since
// folded in (Build.folded), so a compaction's cost is that of the
// snapshot, not of the log.
func renderCompaction(_ context.Context, b *Build, _ *message.Message) error {
	if b.rendering == RenderSnapshot || b.toolsOnly {
		return nil
	}
	if err := b.folded.fold(b); err != nil {
		return err
	}
	var msgs []provider.Message
	b.said = said{} // the snapshot says it all again
	for _, e := range b.folded.entries {
		if e.id == nil {
			msgs = append(msgs, e.msg)
			continue
		}
		value, present, err := b.seen.Value(*e.id)
		if err != nil {
			return err
		}
		description, schema := b.seen.About(*e.id)
		msgs = append(msgs, provider.Message{Role: provider.RoleUser, Text: b.said.block(*e.id, value, present, description, schema)})
	}
	msgs = append(msgs, provider.Message{Role: provider.RoleUser, Text: "## Compacted\nThe context above was compacted: each data block shows its current value, and the plan is the last one."})
	b.messages, b.rendered, b.updated = msgs, 0, 0
	for _, m := range msgs {
		b.rendered += len(m.Text)
	}
	b.planIntro = planIntro
	b.compacted = b.rendered / 4
	return nil
}
