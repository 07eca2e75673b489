package retryhttp

import (
	"context"
	"errors"
	"sync"
)

// refresher lets concurrent 401s share one credential refresh: a tiny
// singleflight, with a generation count so that a request sent before a
// refresh finished, and refused for the old credentials, uses the new ones
// instead of refreshing again.
type refresher struct {
	mu       sync.Mutex
	gen      uint64 // refreshes that succeeded
	auth     string // what the latest of them returned
	inflight *refreshCall
}

type refreshCall struct {
	done chan struct{} // closed when the call returns
	auth string
	err  error
	// abandoned reports that the call failed because its leader's ctx
	// ended: the error says nothing about the credentials, and a follower
	// whose ctx is alive runs the refresh again itself.
	abandoned bool
}

var errRefreshPanicked = errors.New("retryhttp: Refresh panicked")

// generation returns the count of successful refreshes, for a request about
// to be sent.
func (r *refresher) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// do returns the credentials to send again a request that was refused after
// being sent at generation sent. If a refresh has succeeded since, it
// returns that refresh's result; if one is in flight, it waits for it;
// otherwise it calls f with ctx.
func (r *refresher) do(ctx context.Context, f func(context.Context) (string, error), sent uint64) (string, error) {
	for {
		r.mu.Lock()
		if r.gen > sent {
			auth := r.auth
			r.mu.Unlock()
			return auth, nil
		}
		c := r.inflight
		if c == nil {
			c = &refreshCall{done: make(chan struct{})}
			r.inflight = c
			r.mu.Unlock()
			r.lead(ctx, c, f)
			return c.auth, c.err
		}
		r.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		if !c.abandoned {
			return c.auth, c.err
		}
	}
}

// lead runs f for every request waiting on c, and records its result even
// if f panics, so that no follower waits forever.
func (r *refresher) lead(ctx context.Context, c *refreshCall, f func(context.Context) (string, error)) {
	c.err = errRefreshPanicked // replaced unless f panics
	defer func() {
		r.mu.Lock()
		if c.err == nil {
			r.gen++
			r.auth = c.auth
		}
		r.inflight = nil
		r.mu.Unlock()
		close(c.done)
	}()
	c.auth, c.err = f(ctx)
	c.abandoned = c.err != nil && ctx.Err() != nil
}
