package guard

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// maxHoldKeys bounds the targets a Holds keeps: past it, a new hold
// forgets another, so no traffic pattern can grow a Holds.
const maxHoldKeys = 1024

// HoldProbes is how many attempts a lapsed hold lets through before the
// others, to learn whether the server serves again.
const HoldProbes = 3

// maxSpread bounds the jitter that spreads the attempts a hold released.
const maxSpread = 5 * time.Second

// ErrHeld is matched by the error of an attempt that was not sent because
// its target (an HTTP origin, a gRPC target, a kind of op) had asked to be
// held back, by a Retry-After or a pushback: see [Holds].
var ErrHeld = errors.New("guard: target asked to hold back")

// HeldError is the error of an attempt held back: it matches [ErrHeld],
// and says how long the hold has left.
type HeldError struct{ Left time.Duration }

func (e *HeldError) Error() string {
	return ErrHeld.Error() + " for another " + e.Left.Round(time.Millisecond).String()
}

// Is reports whether target is ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// A HoldEpoch orders the attempts and the holds of a Holds: an attempt
// takes the Holds' Epoch when it is let go, and its answer clears only a
// hold that began at or before that epoch.
type HoldEpoch uint64

// Holds keeps, per target (an HTTP origin, a gRPC target), until
// when a server asked its clients to hold back (a Retry-After on a 429 or
// 503, a gRPC pushback), so that one answer holds back every new attempt of
// a client, not only the request that got it. retryhttp, retrygrpc and the
// outbox use it, keyed by origin, target or op kind.
//
// A hold ends in one of two ways. An answer that is not a hold, to a
// request sent after the hold began, clears it: the server serves again.
// Or its time runs out: then a few probes go first (HoldProbes), and the
// attempts queued behind them wait for what the probes learn. If a probe's
// answer renews the hold, they wait again; if one clears it, or if no probe
// has answered by the end of the spread (a quarter of the hold, at most
// 5s), they go, each after a random part of the spread, so that they do not
// come back as one burst. Every hold thus ends by time: at its end plus the
// spread, at the latest, unless an answer renews it.
//
// The zero Holds is ready to use; it is safe for concurrent use.
type Holds struct {
	// Rand, if set, returns the uniform draw in [0, 1) that places a
	// released attempt in the spread [math/rand/v2.Float64]. Set it before
	// first use, with a fake clock, to make a simulation repeat; the
	// goroutines that Wait call it, concurrently if they run at once.
	Rand func() float64

	n     atomic.Int32  // len(m), read without the lock: most of the time nothing is held
	epoch atomic.Uint64 // bumped when a hold begins
	mu    sync.Mutex
	m     map[string]*hold
}

// hold is one target's hold.
type hold struct {
	until  time.Time     // when it ends; then the probes go
	spread time.Duration // how long the others wait for the probes at most, and their jitter
	epoch  HoldEpoch     // when it began: answers to attempts let go before do not clear it
	probes int           // let through since until passed
	// changed is closed, and replaced, when the hold is renewed or cleared,
	// so that its waiters look again.
	changed chan struct{}
}

// Epoch returns the Holds' epoch now, for an attempt about to be sent.
func (s *Holds) Epoch() HoldEpoch { return HoldEpoch(s.epoch.Load()) }

// Hold holds key back for d from now, unless a longer hold stands. A hold
// that stands is renewed: its probes are spent, and its waiters wait anew.
// d must already be capped by the caller (a MaxRetryAfter): a hold never
// lasts longer than it is told.
func (s *Holds) Hold(key string, now time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*hold)
	}
	until := now.Add(d)
	spread := min(d/4, maxSpread)
	h := s.m[key]
	switch {
	case h != nil && now.Before(h.until.Add(h.spread)): // it stands: renew it
		if until.After(h.until) {
			h.until, h.spread = until, spread
		}
		h.probes = 0
		close(h.changed)
		h.changed = make(chan struct{})
		return
	case h == nil && len(s.m) >= maxHoldKeys:
		for k, old := range s.m { // any one: at worst it is throttled once more
			delete(s.m, k)
			close(old.changed)
			break
		}
	case h != nil: // lapsed long ago: a new hold
		close(h.changed)
	}
	s.m[key] = &hold{until: until, spread: spread, epoch: HoldEpoch(s.epoch.Add(1)), changed: make(chan struct{})}
	s.n.Store(int32(len(s.m)))
}

// Clear ends key's hold: its server answered normally again to an attempt
// let go at sent. An answer to an attempt sent before the hold began says
// nothing of the server since, and does not clear it.
func (s *Holds) Clear(key string, sent HoldEpoch) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.m[key]; h != nil && sent >= h.epoch {
		s.drop(key, h)
	}
}

func (s *Holds) drop(key string, h *hold) {
	delete(s.m, key)
	close(h.changed)
	s.n.Store(int32(len(s.m)))
}

// Held reports whether any target is held: a cheap test before a key is
// even made.
func (s *Holds) Held() bool { return s.n.Load() > 0 }

// Until returns when key's hold ends, or the zero time if it has none.
func (s *Holds) Until(key string) time.Time {
	if s.n.Load() == 0 {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.m[key]; h != nil {
		return h.until
	}
	return time.Time{}
}

// Wait waits, before an attempt on key, until the attempt may go: key is
// not held, or its hold has lapsed and the attempt is one of its probes,
// or the probes have cleared it (or failed to answer in time) and the
// attempt's share of the spread has passed. It returns nil then.
//
// It returns a [*HeldError], without waiting, when failFast is set or
// when the hold ends after ctx's deadline (which must be the call's, not
// an attempt's): the attempt must not go. It returns ctx's cause if ctx
// ends while it waits. Time is clk's.
func (s *Holds) Wait(ctx context.Context, clk Clock, key string, failFast bool) error {
	queued := false // it waited behind a hold: it goes after its share of the spread
	var spread time.Duration
	for {
		s.mu.Lock()
		h := s.m[key]
		if h == nil {
			s.mu.Unlock()
			if !queued || spread <= 0 {
				return nil
			}
			queued = false // after the jitter, look once more: a new hold may have begun
			if err := sleep(ctx, clk, time.Duration(s.random()*float64(spread))); err != nil {
				return err
			}
			continue
		}
		now := now(clk)
		var wake time.Time
		switch {
		case now.Before(h.until): // held
			left := h.until.Sub(now)
			if end, ok := ctx.Deadline(); failFast || ok && !end.After(h.until) {
				s.mu.Unlock()
				return &HeldError{Left: left}
			}
			wake = h.until
		case h.probes < HoldProbes: // lapsed: a probe goes
			h.probes++
			s.mu.Unlock()
			return nil
		case !now.Before(h.until.Add(h.spread)): // no probe has answered: the hold ends by time
			s.drop(key, h)
			s.mu.Unlock()
			queued, spread = true, h.spread
			continue
		case failFast: // the probes are out: it must not wait for them
			left := h.until.Add(h.spread).Sub(now)
			s.mu.Unlock()
			return &HeldError{Left: left}
		default: // wait for the probes
			wake = h.until.Add(h.spread)
		}
		queued, spread = true, h.spread
		changed := h.changed
		s.mu.Unlock()
		if err := sleepUntil(ctx, clk, wake, changed); err != nil {
			return err
		}
	}
}

// random is the draw that places a released attempt in the spread.
func (s *Holds) random() float64 {
	if s.Rand != nil {
		return s.Rand()
	}
	return rand.Float64()
}

// sleepUntil waits until t on clk, or until changed is closed; it returns
// ctx's cause if ctx ends first.
func sleepUntil(ctx context.Context, clk Clock, t time.Time, changed <-chan struct{}) error {
	d := t.Sub(now(clk))
	if d <= 0 {
		return nil
	}
	var w context.Context
	var cancel context.CancelFunc
	if clk == nil {
		w, cancel = context.WithTimeout(context.Background(), d)
	} else {
		w, cancel = clk.WithTimeout(context.Background(), d) // a wait, for fakes that skip waits
	}
	defer cancel()
	select {
	case <-w.Done():
		return nil
	case <-changed:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// sleep waits d on clk, or returns ctx's cause if ctx ends first.
func sleep(ctx context.Context, clk Clock, d time.Duration) error {
	return sleepUntil(ctx, clk, now(clk).Add(d), nil)
}
