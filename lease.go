package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/store"
)

// DefaultLeaseTTL is Config.LeaseTTL when it is 0.
const DefaultLeaseTTL = 30 * time.Second

// A durable run is advanced by one owner at a time: the process that
// created it, or the one resuming it, holds its lease in the store and
// renews it every third of its TTL while it works. The store refuses the
// writes of anyone else, so a second `acts resume` of the same run fails
// at once, naming the holder and when its lease expires; after a crash
// the lease expires and a resume takes the run over. A holder whose lease
// was taken over (it stalled past the TTL) loses it: its writes fail and
// its run stops.

// errLeaseLost is the cause of a run cancelled because its lease was
// lost: taken over, or not renewed before it expired.
var errLeaseLost = errors.New("lost its lease")

// errNoAnswer is the cause of a write of the run given up on because the
// store did not answer it within the lease's time.
var errNoAnswer = errors.New("the store did not answer")

// errNoRenewal is why a lease expired when no renewal failed: none was
// tried in time (the process stalled).
var errNoRenewal = errors.New("no renewal was made in time")

// lease is a run's lease held by this process.
type lease struct {
	st    store.Store
	run   string
	owner string
	ttl   time.Duration
	stop  chan struct{}
	done  chan struct{}
	given bool // giveUp saved the run without it
	// writes numbers the run's writes, and writing holds the number of
	// the one in flight (0: none), for keep: a write still in flight
	// after a whole renewal period says the store is not answering.
	writes, writing atomic.Int64
	// silent is the deadline of a write the store did not answer in
	// time: later writes get none of their own (see write).
	silent atomic.Pointer[time.Time]
	// period counts keep's ticks; renewedIn is the latest period in which
	// a journal write that renewed the lease began, or 0, as the write
	// that took the lease (Create, Acquire) came just before keep; and
	// until the latest expiry such a write, or the one that took the
	// lease, gave it, as time since start (see since).
	period, renewedIn, until atomic.Int64
	// start is when the lease was made, on the wall clock: the run's own
	// idea of its expiry is a TTL of the time that passes from the write
	// that renewed it, whatever Config.Clock, which stamps the store's
	// expiry, says. Not the monotonic clock, which stands still while
	// the machine sleeps, when the lease runs out all the same.
	start time.Time
}

// since is the time passed since the lease was made (start has no
// monotonic reading, so this is wall time).
func (l *lease) since() time.Duration { return time.Since(l.start) }

// newOwner names this process and attempt as a lease owner, as a person
// reading an error wants it: host, process and a random part.
func newOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.Text()[:8])
}

func leaseTTL(cfg *Config) time.Duration {
	if cfg.LeaseTTL > 0 {
		return cfg.LeaseTTL
	}
	return DefaultLeaseTTL
}

// newLease returns the lease a new run is created with.
func newLease(cfg *Config, id string) *lease {
	return &lease{st: cfg.Store, run: id, owner: newOwner(), ttl: leaseTTL(cfg), start: time.Now().Round(0)}
}

// terms returns the lease to hold from now.
func (l *lease) terms(ctx context.Context) store.Lease {
	return store.Lease{Owner: l.owner, Expires: platform.Now(ctx).UTC().Add(l.ttl)}
}

// acquire takes run id over: an error naming the holder if another
// holds it.
func acquire(ctx context.Context, cfg *Config, id string) (*lease, error) {
	l := newLease(cfg, id)
	sent, terms := l.since(), l.terms(ctx)
	err := l.take(ctx, sent, func(ctx context.Context) error {
		return cfg.Store.Acquire(ctx, id, terms, platform.Now(ctx).UTC())
	})
	if err != nil {
		// The caller names the run, and the store's error names it too.
		if errors.Is(err, store.ErrLeased) {
			return nil, fmt.Errorf("another process is advancing it: %w", err)
		}
		return nil, err
	}
	return l, nil
}

// keep renews the lease until release; when it cannot (another owner
// took the run over, or the store failed or did not answer until the
// lease expired), it cancels the run with the reason. A journal write
// renews the lease as it lands (see append), so a run that wrote since
// the tick before is not renewed at this one: a busy run renews by its
// writes alone. The run is cancelled when its lease expires, not at the
// tick after: another process may take the run over from then on.
func (l *lease) keep(ctx context.Context, cancel context.CancelCauseFunc) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		// The expiry the write that took the lease sent: the store's is
		// no earlier, and one taken once it answered could be later.
		held := l.renewedUntil(0)
		expiry := time.NewTimer(held - l.since())
		defer expiry.Stop()
		var (
			pending int64 // the write in flight at the tick before
			failed  error // why the last renewal failed, if it did
		)
		for {
			select {
			case <-l.stop:
				return
			case <-expiry.C:
				// Unless a write renewed it since, the lease expired.
				if held = l.renewedUntil(held); l.since() < held {
					expiry.Reset(held - l.since())
					continue
				}
				cancel(errorf("agent: run %s: %w: not renewed before it expired: %w", l.run, errLeaseLost, cmp.Or(failed, errNoRenewal)))
				return
			case <-t.C:
			}
			ended := l.period.Add(1) - 1 // the period this tick ends
			// writing before silent: a write given up sets silent before
			// it clears writing (see write), so one of them says so.
			w := l.writing.Load()
			if l.silent.Load() != nil {
				// A write got no answer: the run is stopping, and its
				// lease lapses for another process to take the run over.
				return
			}
			sent := l.since()
			held = l.renewedUntil(held)
			var err error
			switch {
			case w != 0 && w == pending:
				// The store has not answered a write for a whole period:
				// holding the run on for it would only delay whoever
				// takes it over once the write is given up.
				err = fmt.Errorf("%w a write for %v", errNoAnswer, l.ttl/3)
			case l.renewedIn.Load() == ended:
				// A write begun since the tick before renewed the lease.
				pending = w
				continue
			default:
				pending = w
				err = l.renew(ctx, held-sent)
			}
			switch {
			case err == nil:
				held, failed = sent+l.ttl, nil
				expiry.Reset(held - l.since())
			case errors.Is(err, store.ErrLeased):
				cancel(errorf("agent: run %s: %w: %w", l.run, errLeaseLost, err))
				return
			case l.since() >= held:
				cancel(errorf("agent: run %s: %w: not renewed before it expired: %w", l.run, errLeaseLost, err))
				return
			default:
				failed = err // the expiry timer cancels the run unless a write renews it first
			}
		}
	}()
}

// renewedBy notes that a journal write the store took renewed the lease
// for a TTL from sent, when it was sent (see since): the write began in
// the period it was given.
func (l *lease) renewedBy(period int64, sent time.Duration) {
	for n := int64(sent + l.ttl); ; {
		u := l.until.Load()
		if u >= n || l.until.CompareAndSwap(u, n) {
			break
		}
	}
	for {
		r := l.renewedIn.Load()
		if r >= period || l.renewedIn.CompareAndSwap(r, period) {
			return
		}
	}
}

// renewedUntil is the later of held and the expiry the journal's writes
// renewed the lease to, as time since start.
func (l *lease) renewedUntil(held time.Duration) time.Duration {
	return max(held, time.Duration(l.until.Load()))
}

// renew renews the lease, waiting no longer than left, until the lease
// expires: a store that does not answer by then has let the run go to
// whoever takes it over.
func (l *lease) renew(ctx context.Context, left time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), left)
	defer cancel()
	return l.st.Acquire(ctx, l.run, l.terms(ctx), platform.Now(ctx).UTC())
}

// release stops renewing the lease; the last Save of the run gives it up.
func (l *lease) release() {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	}
}

// giveUp releases a lease taken for a run that does not go on, saving
// run as it is without it; only the first call saves.
func (l *lease) giveUp(ctx context.Context, run store.Run) {
	l.release()
	if run.ID == "" || l.given {
		return
	}
	l.given = true
	run.Lease = store.Lease{}
	_ = l.write(ctx, func(ctx context.Context) error { return l.st.Save(ctx, l.owner, run) })
}

// take runs f, the write that takes the run (its Create, or a resume's
// Acquire), waiting for it no longer than the lease lasts, as write
// does, but cancelled with ctx: nothing has happened yet that the run
// would lose. Taken, the lease is held for a TTL from sent, when its
// terms were made (see since): the store answers later.
func (l *lease) take(ctx context.Context, sent time.Duration, f func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, l.ttl)
	defer cancel()
	err := f(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return l.noAnswer(err)
	}
	if err == nil {
		l.until.Store(int64(sent + l.ttl))
	}
	return err
}

// write runs f, a write of the run's journal or record, with a ctx not
// cancelled with the run, since it records what already happened, but
// given up after the lease's time. A write that has not landed by then
// would land, if ever, when another process may have taken the run
// over, and waiting on a store that does not answer only keeps the run
// from returning. Once the store left one write unanswered, the writes
// after it (the run's status, its record) get no more time, so the run
// returns about a lease after the write began, not a lease per write.
func (l *lease) write(ctx context.Context, f func(context.Context) error) error {
	var (
		wctx   context.Context
		cancel context.CancelFunc
	)
	if d := l.silent.Load(); d != nil {
		wctx, cancel = context.WithDeadline(context.WithoutCancel(ctx), *d)
	} else {
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), l.ttl)
	}
	defer cancel()
	l.writing.Store(l.writes.Add(1))
	err := f(wctx)
	silent := err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded)
	if silent {
		// Said before the write is done with, so that keep, ticking at
		// this very moment, sees one or the other and does not renew.
		d, _ := wctx.Deadline()
		l.silent.CompareAndSwap(nil, &d)
	}
	l.writing.Store(0)
	if silent {
		return l.noAnswer(err)
	}
	return err
}

// append appends entries to the run's journal, a write (see write)
// that renews the lease, as Acquire would, when no write renewed it in
// this period yet: once a period is all keep asks, and an expiry on
// every Append would cost a store that does not rewrite the run's
// record on each (SQLite) a write of it each time.
func (l *lease) append(ctx context.Context, entries []store.Entry) error {
	return l.write(ctx, func(ctx context.Context) error {
		period := l.period.Load() // before the terms: a tick between makes it older
		terms, sent := store.Lease{Owner: l.owner}, l.since()
		renew := l.renewedIn.Load() < period
		if renew {
			terms = l.terms(ctx)
		}
		if err := l.st.Append(ctx, l.run, terms, entries...); err != nil {
			return err
		}
		if renew {
			l.renewedBy(period, sent)
		}
		return nil
	})
}

// save saves run, which keeps the lease, with entries appended to its
// journal: a write (see write) that renews the lease, as append does.
func (l *lease) save(ctx context.Context, run *store.Run, entries []store.Entry) error {
	return l.write(ctx, func(ctx context.Context) error {
		period := l.period.Load() // before the terms, as in append
		sent := l.since()
		run.Lease = l.terms(ctx)
		if err := l.st.Save(ctx, l.owner, *run, entries...); err != nil {
			return err
		}
		l.renewedBy(period, sent)
		return nil
	})
}

// noAnswer is err, of a write the store did not answer within the lease.
func (l *lease) noAnswer(err error) error {
	return fmt.Errorf("%w within the run's lease (%v): %w", errNoAnswer, l.ttl, err)
}
