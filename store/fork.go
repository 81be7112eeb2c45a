package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Fork creates run newID as a branch of run id: its journal is the
// parent's up to and including the message with log index at (0 is the
// first [EntryMessage] of the journal), and its metadata is the parent's
// Kind, Idea, Model and Spec, with Status [Interrupted] so that it can be
// resumed, Parent id, ForkedAt the Seq of that message, Created and
// Updated now, and zero Usage. Fork returns the new run.
//
// The new journal holds every parent entry up to that message and the
// call entries that follow it up to the next message (a call's messages
// and its [EntrySettled] are appended together, messages first),
// renumbered from 1 by [Store.Append], except an [EntryStarted] whose
// [EntrySettled] (the entry with the same Call) is not among them: in the
// fork, that call has not run yet (its [EntryQueued], when the model had
// written it by then, stays, and a resume of the fork runs it).
// [EntryQueued] and [EntryAdvice] entries after the message are left out:
// the model wrote them later. So is the [EntrySettled] of a call that
// failed (its Data holds its error message) after the message, unless it
// is that of the call that wrote the message (to its error branch): a
// failed call's error message is appended at the end of its tick, after
// the message, and in the fork the call has not run yet.
//
// Fork returns an error wrapping [ErrNotFound] if the parent does not
// exist, [ErrExists] if newID does, and [ErrRange] if at is negative or
// the parent's log has no message at index at.
//
// The new run is created with its journal in one [Store.Create], so a
// fork racing another to the same newID either wins whole or fails with
// ErrExists. No one holds it: the resume that continues it takes it.
func Fork(ctx context.Context, s Store, c Catalog, id string, at int, newID string, now time.Time) (Run, error) {
	parent, err := c.Load(ctx, id)
	if err != nil {
		return Run{}, fmt.Errorf("fork run %s: %w", id, err)
	}
	switch _, err := c.Load(ctx, newID); {
	case err == nil:
		return Run{}, fmt.Errorf("fork run %s as %s: %w", id, newID, ErrExists)
	case !errors.Is(err, ErrNotFound):
		return Run{}, fmt.Errorf("fork run %s as %s: %w", id, newID, err)
	}
	if at < 0 {
		return Run{}, fmt.Errorf("%w: fork run %s at message %d", ErrRange, id, at)
	}

	var (
		prefix   []Entry
		messages int
		forkedAt int64 = -1
		byCall   bool  // whether message at is a call's output
		owned    bool  // whether its call's settling is in prefix
	)
	for e, err := range s.Entries(ctx, id, 0) {
		if err != nil {
			return Run{}, fmt.Errorf("fork run %s: %w", id, err)
		}
		if forkedAt >= 0 {
			// The records written with message at (the settling of the
			// call that wrote it) belong to the prefix; the next message,
			// or the end of the run, does not.
			if e.Type == EntryMessage || e.Type == EntryEnd {
				break
			}
			if e.Type == EntryQueued || e.Type == EntryAdvice {
				continue // the model wrote it after the message
			}
			if e.Type == EntrySettled {
				// The first settling is that of the call that wrote the
				// message, if one did. Another call's failure is after
				// the message: its error message is appended at the end
				// of its tick, so in the fork the call has not run yet.
				mine := byCall && !owned
				owned = owned || byCall
				if !mine && len(e.Data) > 0 {
					continue
				}
			}
			prefix = append(prefix, e)
			continue
		}
		prefix = append(prefix, e)
		if e.Type == EntryMessage {
			if messages == at {
				forkedAt = e.Seq
				var m struct {
					Call json.RawMessage `json:"_call"`
				}
				byCall = json.Unmarshal(e.Data, &m) == nil && m.Call != nil
			}
			messages++
		}
	}
	if forkedAt < 0 {
		return Run{}, fmt.Errorf("%w: fork run %s at message %d: its log has %d messages", ErrRange, id, at, messages)
	}

	settled := make(map[string]bool)
	for _, e := range prefix {
		if e.Type == EntrySettled {
			settled[e.Call] = true
		}
	}
	entries := prefix[:0]
	for _, e := range prefix {
		if e.Type == EntryStarted && !settled[e.Call] {
			continue
		}
		entries = append(entries, e)
	}

	run := Run{
		ID:       newID,
		Kind:     parent.Kind,
		Idea:     parent.Idea,
		Model:    parent.Model,
		Status:   Interrupted,
		Parent:   id,
		ForkedAt: forkedAt,
		Spec:     parent.Spec,
		Created:  now,
		Updated:  now,
	}
	if err := s.Create(ctx, run, entries...); err != nil {
		return Run{}, fmt.Errorf("fork run %s as %s: %w", id, newID, err)
	}
	return run, nil
}
