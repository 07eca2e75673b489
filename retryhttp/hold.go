package retryhttp

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/clocks"
)

// HoldMode says what a [Transport] does with new attempts to a host that
// asked it to hold back: a 429 or 503 with a Retry-After.
//
// Without a hold, a thousand concurrent requests to a throttled host each
// have to reach it to learn the same Retry-After, and each is one more
// request it must refuse. With one, the first answer holds back every
// attempt to that host (scheme, host and port) until the time it named.
type HoldMode uint8

const (
	// HoldWait makes new attempts to a held host wait until the hold ends,
	// each a little longer at random (up to a quarter of the hold, at most
	// 5s), so that they do not come back as one burst. An attempt whose
	// request cannot wait that long (its MaxElapsed or ctx deadline comes
	// first) fails at once with ErrHostHeld. It is the default.
	HoldWait HoldMode = iota
	// HoldFailFast makes new attempts to a held host fail at once with
	// ErrHostHeld, which is not retried.
	HoldFailFast
	// HoldOff keeps no holds: each request learns of a throttle for itself.
	HoldOff
)

// ErrHostHeld is matched by the error of an attempt that was not sent
// because its host had asked the Transport to hold back (see [HoldMode]).
var ErrHostHeld = errors.New("retryhttp: host asked to hold back (Retry-After)")

// holds keeps, per origin, until when it asked to be held back. A host that
// answers anything but 429 or 503 again clears its hold. At most
// maxOrigins are kept.
type holds struct {
	n  atomic.Int32 // len(m), read without the lock: most of the time no host is held
	mu sync.Mutex
	m  map[string]time.Time
}

// note records what resp, an answer to c, says of a hold.
func (c *call) noteHold(resp *http.Response) {
	throttled := (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) &&
		resp.Header.Get("Retry-After") != ""
	switch {
	case c.t.Hold == HoldOff:
		return
	case !throttled && c.t.held.n.Load() == 0:
		return // nothing to record, nothing to clear
	}
	c.t.held.note(c.origin(), resp, clocks.Now(c.clk), c.t.maxRetryAfter())
}

// note records what resp, an answer from origin at now, says of a hold.
func (h *holds) note(origin string, resp *http.Response, now time.Time, limit time.Duration) {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		v := resp.Header.Get("Retry-After")
		if v == "" {
			return
		}
		d, ok := parseRetryAfter(v, now, limit)
		if !ok || d <= 0 {
			return
		}
		until := now.Add(d)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.m == nil {
			h.m = make(map[string]time.Time)
		}
		if cur, held := h.m[origin]; !held && len(h.m) >= maxOrigins {
			for k := range h.m { // any one: it may be throttled again, at worst
				delete(h.m, k)
				break
			}
		} else if cur.After(until) {
			return // a longer hold stands
		}
		h.m[origin] = until
		h.n.Store(int32(len(h.m)))
	default:
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.m, origin) // a normal answer: the throttle is over
		h.n.Store(int32(len(h.m)))
	}
}

// until returns when origin's hold ends, or the zero time if it has none.
func (h *holds) until(origin string) time.Time {
	if h.n.Load() == 0 {
		return time.Time{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[origin]
}

// awaitHold waits, before an attempt is sent, until its origin's hold
// ends, as the Transport's HoldMode says. loop is the attempt's ctx: its
// deadline is the request's MaxElapsed or ctx deadline.
func (c *call) awaitHold(loop context.Context) error {
	if c.t.Hold == HoldOff || c.t.held.n.Load() == 0 {
		return nil
	}
	until := c.t.held.until(c.origin())
	if until.IsZero() {
		return nil
	}
	start := clocks.Now(c.clk)
	left := until.Sub(start)
	if left <= 0 {
		return nil
	}
	if c.t.Hold == HoldFailFast {
		return &holdError{left: left}
	}
	wait := left + time.Duration(rand.Float64()*float64(min(left/4, 5*time.Second)))
	if end, ok := loop.Deadline(); ok && end.Sub(start) <= wait {
		return &holdError{left: left} // cannot wait that long: give up at once
	}
	if c.clk == nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-loop.Done():
			return context.Cause(loop)
		}
	}
	w, cancel := c.clk.WithTimeout(context.Background(), wait)
	defer cancel()
	select {
	case <-w.Done():
		return nil
	case <-loop.Done():
		return context.Cause(loop)
	}
}

// holdError is the error of an attempt held back: it matches ErrHostHeld.
type holdError struct{ left time.Duration }

func (e *holdError) Error() string {
	return ErrHostHeld.Error() + " for another " + e.left.Round(time.Millisecond).String()
}

func (e *holdError) Is(target error) bool { return target == ErrHostHeld }
