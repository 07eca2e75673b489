package guard

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// MaxWatchers bounds the watchers of one guard (a Breaker, a Throttle, or
// a Breakers or Throttles, whose watchers hear every member): each
// Transport, interceptor, Observer or Recorder that watches it is one. A
// Watch past it fails with [ErrTooManyWatchers] rather than drop anyone
// silently.
const MaxWatchers = 16

// A Change is one change of state of a Breaker or a Throttle.
type Change struct {
	// Key is the key of the guard in its Breakers or Throttles, or "" for
	// one made alone.
	Key string
	// Breaker says the change is a breaker's, from state From to state
	// To. Otherwise it is a throttle's, and Shedding says whether it
	// started shedding (true) or stopped.
	Breaker  bool
	From, To BreakerState
	Shedding bool
}

// Watch calls f with each change of state of b from now on, until stop is
// called (stop may be called more than once). f is called synchronously,
// in the order of the changes, by whichever call made the change: it must
// be quick, and must not call back into b. A watched breaker that opens
// sets one timer for the end of OpenFor, so that f hears of the move to
// half-open on time, whether or not a call comes.
func (b *Breaker) Watch(f func(Change)) (stop func(), err error) {
	return lazyWatchers(&b.ws).watch(f)
}

// Watch calls f with each change of a Throttle, as [Breaker.Watch] does.
func (t *Throttle) Watch(f func(Change)) (stop func(), err error) {
	return lazyWatchers(&t.ws).watch(f)
}

// Watch calls f with each change of state of every Breaker of bs, those
// made later included, as [Breaker.Watch] does; Change.Key says which.
func (bs *Breakers) Watch(f func(Change)) (stop func(), err error) {
	return bs.ws.watch(f)
}

// Watch calls f with each change of every Throttle of ts, as
// [Breakers.Watch] does.
func (ts *Throttles) Watch(f func(Change)) (stop func(), err error) {
	return ts.ws.watch(f)
}

// watchers are those told of the changes of state of a Breaker or a
// Throttle, or of every one of a Breakers or Throttles. An empty list
// costs a change one atomic load, and an attempt nothing: only changes
// consult it.
type watchers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]watcher] // copied on write
}

type watcher struct {
	id *byte // unique per Watch: what stop removes
	f  func(Change)
}

// watching reports whether anyone watches.
func (ws *watchers) watching() bool {
	l := ws.list.Load()
	return l != nil && len(*l) > 0
}

// tell calls every watcher with c.
func (ws *watchers) tell(c Change) {
	if l := ws.list.Load(); l != nil {
		for _, w := range *l {
			w.f(c)
		}
	}
}

var errNilWatcher = invalid("Watch: nil func")

// watch adds f, and returns the func that removes it.
func (ws *watchers) watch(f func(Change)) (func(), error) {
	if f == nil {
		return nil, errNilWatcher
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var old []watcher
	if l := ws.list.Load(); l != nil {
		old = *l
	}
	if len(old) >= MaxWatchers {
		return nil, ErrTooManyWatchers
	}
	id := new(byte)
	next := append(append(make([]watcher, 0, len(old)+1), old...), watcher{id, f})
	ws.list.Store(&next)
	var once sync.Once
	return func() { once.Do(func() { ws.unwatch(id) }) }, nil
}

// unwatch removes the watcher id.
func (ws *watchers) unwatch(id *byte) {
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

// afterFunc calls f at t on clk. On the real clock that is a runtime timer,
// with no goroutine until it fires; an injected clock has only contexts to
// offer (see [Clock]), and context.AfterFunc waits on one with a goroutine.
func afterFunc(clk Clock, ns int64, f func()) {
	if clk == nil {
		time.AfterFunc(time.Duration(ns-coarse.Nanos(time.Now())), f)
		return
	}
	ctx, cancel := clk.WithDeadline(context.Background(), coarse.Time(ns))
	context.AfterFunc(ctx, func() {
		cancel()
		f()
	})
}
