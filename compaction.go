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

// renderCompaction folds the rendered messages before m into a snapshot
// (see above); under RenderSnapshot, which renders a snapshot anyway, it
// does nothing.
func renderCompaction(_ context.Context, b *Build, _ *message.Message) error {
	if b.rendering == RenderSnapshot || b.toolsOnly {
		return nil
	}
	lastPlan := -1
	for i := b.Index - 1; i >= 0 && lastPlan < 0; i-- {
		if typ, _ := b.Log.IdentityAt(i); typ == message.TypePlan {
			lastPlan = i
		}
	}
	var msgs []provider.Message
	render := func(role provider.Role, text string) { msgs = append(msgs, provider.Message{Role: role, Text: text}) }
	shown := map[message.Identity]bool{}
	for i := range b.Index {
		if own, ok := b.own[i]; ok { // a handler of the user's rendered it
			msgs = append(msgs, own...)
			continue
		}
		m := b.Log.At(i)
		switch {
		case m.Type == message.TypeText:
			render(provider.Role(m.Role), m.Text)
		case m.Type == message.TypeData && !shown[m.Identity()]:
			id := m.Identity()
			shown[id] = true
			value, present, err := b.seen.Value(id)
			if err != nil {
				return err
			}
			description, schema := b.seen.About(id)
			render(provider.RoleUser, DataBlock(id, value, present, description, schema))
		case m.Type == message.TypePlan && i == lastPlan:
			render(provider.RoleUser, "## Plan\n"+planIntro+"\n"+compactLines(m.Plan))
		case m.Type == message.TypeError && i > lastPlan:
			render(provider.RoleUser, errorText(&m))
		case m.Type == message.TypeMeta:
			render(provider.RoleUser, "## Meta\n"+compact(m.Meta))
		case m.Type == message.TypeAdvisor:
			a, _, err := b.advisorOf(&m)
			if err != nil {
				return err
			}
			render(provider.RoleUser, advisorText(a))
		}
	}
	render(provider.RoleUser, "## Compacted\nThe context above was compacted: each data block shows its current value, and the plan is the last one.")
	b.messages, b.rendered = msgs, 0
	for _, m := range msgs {
		b.rendered += len(m.Text)
	}
	b.planIntro = planIntro
	b.compacted = b.rendered / 4
	return nil
}
