package retryhttp

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/guards"
)

// guards gives p the Breaker and Throttle of c's origin, from Breakers and
// Throttles, unless p has its own; and, with a Logger, has the changes of
// state of whatever guards p logged.
func (t *Transport) guards(c *call, p *retry.Policy) {
	var br, th any
	if p.Breaker != nil {
		br = p.Breaker
	} else if t.Breakers != nil {
		p.Breaker, br = t.Breakers.Get(c.origin()), t.Breakers
	}
	if p.Throttle != nil {
		th = p.Throttle
	} else if t.Throttles != nil {
		p.Throttle, th = t.Throttles.Get(c.origin()), t.Throttles
	}
	if t.Logger != nil {
		if br != nil {
			t.watched.watch(t, br)
		}
		if th != nil {
			t.watched.watch(t, th)
		}
	}
}

// maxWatched bounds the guards a Transport logs the changes of: a Policy
// with a Breaker of its own per request would otherwise grow the set.
const maxWatched = 64

// watched is the set of breakers and throttles (single or keyed) whose
// changes of state a Transport logs. A request through one already watched
// costs a lookup that takes no lock.
type watched struct {
	set sync.Map // target → struct{}
	n   atomic.Int32
}

// watch has target's changes logged by t, from now on, once.
func (w *watched) watch(t *Transport, target any) {
	if _, ok := w.set.Load(target); ok || w.n.Load() >= maxWatched {
		return
	}
	if _, dup := w.set.LoadOrStore(target, struct{}{}); dup {
		return
	}
	w.n.Add(1)
	guards.Watch(target, t, t.logChange)
}

// The lines of the changes of state of breakers and throttles, written
// once each, unsampled.
const (
	msgBreakerOpened   = "retryhttp: circuit breaker opened"
	msgBreakerHalfOpen = "retryhttp: circuit breaker half-open"
	msgBreakerClosed   = "retryhttp: circuit breaker closed"
	msgThrottleOn      = "retryhttp: throttling started"
	msgThrottleOff     = "retryhttp: throttling stopped"
)

// logChange writes the line of one change: Warn when requests start to
// fail fast or be shed, Info when they go again. The origin is the key of
// the breaker or throttle in Breakers or Throttles; a Policy's own, shared
// by every origin, has none.
func (t *Transport) logChange(ch guards.Change) {
	l := t.Logger
	if l == nil {
		return
	}
	level, msg := slog.LevelInfo, msgThrottleOff
	switch {
	case ch.Breaker && retry.BreakerState(ch.To) == retry.BreakerOpen:
		level, msg = slog.LevelWarn, msgBreakerOpened
	case ch.Breaker && retry.BreakerState(ch.To) == retry.BreakerHalfOpen:
		msg = msgBreakerHalfOpen
	case ch.Breaker:
		msg = msgBreakerClosed
	case ch.On:
		level, msg = slog.LevelWarn, msgThrottleOn
	}
	ctx := context.Background() // the change belongs to many requests
	if !l.Enabled(ctx, level) {
		return
	}
	if ch.Key == "" {
		l.LogAttrs(ctx, level, msg)
		return
	}
	l.LogAttrs(ctx, level, msg, slog.String("origin", ch.Key))
}
