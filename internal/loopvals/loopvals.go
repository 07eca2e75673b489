// Package loopvals keeps values that belong to one retry loop, for the
// packages beside retry: the ctx that retry.Do and retry.Hedge hand their
// op carries the loop's Values while the loop runs, so that what one
// attempt of a logical call chose (an idempotency key, say) is found again
// by the next attempt, whatever request or ctx that attempt makes anew.
package loopvals

import (
	"context"
	"sync"
)

// Key is the ctx key under which a retry loop's op ctx answers with its
// *Values, or nil once the loop has returned.
type Key struct{}

// Values is a retry loop's store. Its zero value is ready; it is safe for
// concurrent use, since an op may make its calls from several goroutines
// and a hedge runs its attempts at once.
type Values struct {
	mu sync.Mutex
	m  map[any]any
}

// Of returns the Values of the live retry loop whose op ctx ctx is or
// derives from, or nil when there is none.
func Of(ctx context.Context) *Values {
	v, _ := ctx.Value(Key{}).(*Values)
	return v
}

// LoadOrStore returns the value under key, storing newValue's result there
// first if there is none. key must be comparable; packages use key types of
// their own, so that their keys never meet.
func (v *Values) LoadOrStore(key any, newValue func() any) any {
	v.mu.Lock()
	defer v.mu.Unlock()
	if got, ok := v.m[key]; ok {
		return got
	}
	if v.m == nil {
		v.m = make(map[any]any)
	}
	got := newValue()
	v.m[key] = got
	return got
}
