package retryhttp

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// holds returns the holds the Transport keeps: Guards.Holds, or its own.
func (t *Transport) holds() *guard.Holds {
	if t.Guards.Holds != nil {
		return t.Guards.Holds
	}
	return &t.held
}

// watchGuards has the Logger get the changes of state of the guards p
// uses: the sets of Guards (every member) or p's own.
func (t *Transport) watchGuards(p *retry.Policy) {
	if t.Logger == nil {
		return
	}
	if t.Guards.Breakers != nil {
		t.watched.watch(t, t.Guards.Breakers)
	} else if p.Breaker != nil {
		t.watched.watch(t, p.Breaker)
	}
	if t.Guards.Throttles != nil {
		t.watched.watch(t, t.Guards.Throttles)
	} else if p.Throttle != nil {
		t.watched.watch(t, p.Throttle)
	}
}

// maxWatched bounds the guards a Transport logs the changes of: a Policy
// with a Breaker of its own per request would otherwise grow the set.
const maxWatched = 64

// watchable is a guard whose changes can be watched.
type watchable interface {
	Watch(func(guard.Change)) (stop func(), err error)
}

// watched is the set of breakers and throttles (single or keyed) whose
// changes of state a Transport logs. A request through one already watched
// costs a lookup that takes no lock.
type watched struct {
	set sync.Map // watchable → struct{}
	n   atomic.Int32
}

// watch has target's changes logged by t, from now on, once. The watcher
// holds t weakly, and t's cleanup stops it: a Transport dropped by its
// program stops watching, rather than be kept alive by a shared breaker.
func (w *watched) watch(t *Transport, target watchable) {
	if _, ok := w.set.Load(target); ok || w.n.Load() >= maxWatched {
		return
	}
	if _, dup := w.set.LoadOrStore(target, struct{}{}); dup {
		return
	}
	w.n.Add(1)
	wt := weak.Make(t)
	stop, err := target.Watch(func(ch guard.Change) {
		if t := wt.Value(); t != nil {
			t.logChange(ch)
		}
	})
	if err != nil {
		// Full (guard.MaxWatchers): the changes go unlogged by this
		// Transport, and its requests are unaffected; it says so once.
		t.Logger.LogAttrs(context.Background(), slog.LevelWarn, msgUnwatched, slog.String("error", err.Error()))
		return
	}
	runtime.AddCleanup(t, func(stop func()) { stop() }, stop)
}

// The lines of the changes of state of breakers and throttles, written
// once each, unsampled.
const (
	msgBreakerOpened   = "retryhttp: circuit breaker opened"
	msgBreakerHalfOpen = "retryhttp: circuit breaker half-open"
	msgBreakerClosed   = "retryhttp: circuit breaker closed"
	msgThrottleOn      = "retryhttp: throttling started"
	msgThrottleOff     = "retryhttp: throttling stopped"
	msgUnwatched       = "retryhttp: changes of a breaker or throttle will not be logged"
)

// logChange writes the line of one change: Warn when requests start to
// fail fast or be shed, Info when they go again. The origin is the key of
// the breaker or throttle in Guards' sets; a Policy's own, shared by
// every origin, has none.
func (t *Transport) logChange(ch guard.Change) {
	l := t.Logger
	if l == nil {
		return
	}
	level, msg := slog.LevelInfo, msgThrottleOff
	switch {
	case ch.Breaker && ch.To == guard.BreakerOpen:
		level, msg = slog.LevelWarn, msgBreakerOpened
	case ch.Breaker && ch.To == guard.BreakerHalfOpen:
		msg = msgBreakerHalfOpen
	case ch.Breaker:
		msg = msgBreakerClosed
	case ch.Shedding:
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
