// Package holds keeps, per target (an HTTP origin, a gRPC target), until
// when a server asked its clients to hold back (a Retry-After on a 429 or
// 503, a gRPC pushback), so that one answer holds back every new attempt of
// a client, not only the request that got it. retryhttp and retrygrpc use
// it.
package holds

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
)

// MaxKeys bounds the targets a Set keeps: past it, a new hold forgets
// another, so no traffic pattern can grow a Set.
const MaxKeys = 1024

// maxSpread bounds the jitter added to a hold's end.
const maxSpread = 5 * time.Second

// A Set holds targets back. Its zero value is ready to use; it is safe for
// concurrent use.
type Set struct {
	n  atomic.Int32 // len(m), read without the lock: most of the time nothing is held
	mu sync.Mutex
	m  map[string]time.Time
}

// Hold holds key back until until, unless a longer hold stands.
func (s *Set) Hold(key string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]time.Time)
	}
	if cur, held := s.m[key]; held && cur.After(until) {
		return // a longer hold stands
	} else if !held && len(s.m) >= MaxKeys {
		for k := range s.m { // any one: at worst it is throttled once more
			delete(s.m, k)
			break
		}
	}
	s.m[key] = until
	s.n.Store(int32(len(s.m)))
}

// Clear ends key's hold: its server answered normally again.
func (s *Set) Clear(key string) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	s.n.Store(int32(len(s.m)))
}

// Held reports whether any target is held: a cheap test before a key is
// even made.
func (s *Set) Held() bool { return s.n.Load() > 0 }

// Until returns when key's hold ends, or the zero time if it has none.
func (s *Set) Until(key string) time.Time {
	if s.n.Load() == 0 {
		return time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// Wait waits, before an attempt on key, until key's hold ends and then a
// little longer at random (up to a quarter of what was left, at most 5s),
// so that the attempts it held back do not come back as one burst. It
// returns 0 and nil when the attempt may go. It returns how long the hold
// has left, without waiting, when failFast is set or when the hold outlasts
// ctx's deadline: the attempt must not go. It returns ctx's cause if ctx
// ends while it waits. Time is clk's.
func (s *Set) Wait(ctx context.Context, clk retry.Clock, key string, failFast bool) (time.Duration, error) {
	until := s.Until(key)
	if until.IsZero() {
		return 0, nil
	}
	start := clocks.Now(clk)
	left := until.Sub(start)
	if left <= 0 {
		return 0, nil
	}
	if failFast {
		return left, nil
	}
	wait := left + time.Duration(rand.Float64()*float64(min(left/4, maxSpread)))
	if end, ok := ctx.Deadline(); ok && end.Sub(start) <= wait {
		return left, nil // it cannot wait that long: give up at once
	}
	if clk == nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return 0, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
	w, cancel := clk.WithTimeout(context.Background(), wait) // a wait, for fakes that skip waits
	defer cancel()
	select {
	case <-w.Done():
		return 0, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}
