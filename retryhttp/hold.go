package retryhttp

import (
	"context"
	"errors"
	"net/http"
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

// noteHold records what resp, an answer to c, says of a hold: a 429 or 503
// with a Retry-After holds the origin back; any other answer but those
// clears its hold.
func (c *call) noteHold(resp *http.Response) {
	if c.t.Hold == HoldOff {
		return
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		v := resp.Header.Get("Retry-After")
		if v == "" {
			return
		}
		now := clocks.Now(c.clk)
		if d, ok := parseRetryAfter(v, now, c.t.maxRetryAfter()); ok && d > 0 {
			c.t.held.Hold(c.origin(), now.Add(d))
		}
	default:
		if c.t.held.Held() {
			c.t.held.Clear(c.origin())
		}
	}
}

// awaitHold waits, before an attempt is sent, until its origin's hold
// ends, as the Transport's HoldMode says. loop is the attempt's ctx: its
// deadline is the request's MaxElapsed or ctx deadline.
func (c *call) awaitHold(loop context.Context) error {
	if c.t.Hold == HoldOff || !c.t.held.Held() {
		return nil
	}
	left, err := c.t.held.Wait(loop, c.clk, c.origin(), c.t.Hold == HoldFailFast)
	switch {
	case err != nil:
		return err
	case left > 0:
		return &holdError{left: left}
	}
	return nil
}

// holdError is the error of an attempt held back: it matches ErrHostHeld.
type holdError struct{ left time.Duration }

func (e *holdError) Error() string {
	return ErrHostHeld.Error() + " for another " + e.left.Round(time.Millisecond).String()
}

func (e *holdError) Is(target error) bool { return target == ErrHostHeld }
