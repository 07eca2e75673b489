package retry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/guards"
)

// maxWatchers bounds the watchers of one breaker or throttle: each
// Transport, interceptor, Observer or Recorder that watches it is one.
const maxWatchers = 16

// watchers are those told of the changes of state of a Breaker or a
// Throttle, or of every one of a Breakers or Throttles. An empty list
// costs a change one atomic load, and an attempt nothing: only changes
// consult it.
type watchers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]watcher] // copied on write
}

type watcher struct {
	id any
	f  func(guards.Change)
}

// watching reports whether anyone watches.
func (ws *watchers) watching() bool {
	l := ws.list.Load()
	return l != nil && len(*l) > 0
}

// tell calls every watcher with c.
func (ws *watchers) tell(c guards.Change) {
	if l := ws.list.Load(); l != nil {
		for _, w := range *l {
			w.f(c)
		}
	}
}

// watch adds or replaces the watcher id.
func (ws *watchers) watch(id any, f func(guards.Change)) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var old []watcher
	if l := ws.list.Load(); l != nil {
		old = *l
	}
	next := make([]watcher, 0, len(old)+1)
	for _, w := range old {
		if w.id != id {
			next = append(next, w)
		}
	}
	if len(next) >= maxWatchers {
		return false
	}
	next = append(next, watcher{id, f})
	ws.list.Store(&next)
	return true
}

// unwatch removes the watcher id.
func (ws *watchers) unwatch(id any) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	l := ws.list.Load()
	if l == nil {
		return
	}
	next := make([]watcher, 0, len(*l))
	for _, w := range *l {
		if w.id != id {
			next = append(next, w)
		}
	}
	ws.list.Store(&next)
}

// lazyWatchers returns the watchers at p, made on first use: a lone
// Breaker or Throttle that nobody watches holds none.
func lazyWatchers(p *atomic.Pointer[watchers]) *watchers {
	if ws := p.Load(); ws != nil {
		return ws
	}
	p.CompareAndSwap(nil, new(watchers))
	return p.Load()
}

// watchersOf returns the watchers of target, or nil if it has none to give.
func watchersOf(target any) *watchers {
	switch t := target.(type) {
	case *Breaker:
		if t != nil {
			return lazyWatchers(&t.ws)
		}
	case *Throttle:
		if t != nil {
			return lazyWatchers(&t.ws)
		}
	case *Breakers:
		if t != nil {
			return &t.ws
		}
	case *Throttles:
		if t != nil {
			return &t.ws
		}
	}
	return nil
}

func init() {
	guards.Watch = func(target, id any, f func(guards.Change)) bool {
		ws := watchersOf(target)
		return ws != nil && f != nil && ws.watch(id, f)
	}
	guards.MarkFailed = func(d any) { d.(*Decision).failed = true }
	guards.Unwatch = func(target, id any) {
		if ws := watchersOf(target); ws != nil {
			ws.unwatch(id)
		}
	}
}

// afterFunc calls f at t on clk. On the real clock that is a runtime timer,
// with no goroutine until it fires; an injected clock has only contexts to
// offer (see [Clock]), and context.AfterFunc waits on one with a goroutine.
func afterFunc(clk Clock, t time.Time, f func()) {
	if clk == nil {
		time.AfterFunc(time.Until(t), f)
		return
	}
	ctx, cancel := clk.WithDeadline(context.Background(), t)
	context.AfterFunc(ctx, func() {
		cancel()
		f()
	})
}
