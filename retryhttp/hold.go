package retryhttp

import (
	"context"
	"net/http"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/shed"
)

// HoldMode says what a [Transport] does with new attempts to a host that
// asked it to hold back: a 429 or 503 with a Retry-After, or a response
// whose quota is used up (see [QuotaMode]).
//
// Without a hold, a thousand concurrent requests to a throttled host each
// have to reach it to learn the same Retry-After, and each is one more
// request it must refuse. With one, the first answer holds back every
// attempt to that host until the time it named, capped at MaxRetryAfter.
//
// Holds are kept per origin (scheme, host and port), the unit a Retry-After
// speaks for (RFC 9110 §10.2.3 scopes it to the server that sent it), and
// the unit that [Transport.Guards] uses too: one host's throttle never
// delays another's requests. At most 1,024 origins are held at once.
//
// When a hold's time is up, three requests go first as probes; the others
// wait for what the probes learn. A probe answered with another 429 or 503
// and a Retry-After renews the hold, and the others wait again; any other
// answer clears it, and the others go, each after a random share of a
// quarter of the hold (at most 5s), so that they do not come back as one
// burst. If no probe has answered by then, they go anyway: every hold ends
// by time. Only the answer to a request sent after the hold began clears
// it: a request that was in flight when the server began to throttle says
// nothing of the server since.
type HoldMode uint8

const (
	// HoldWait makes new attempts to a held host wait until the hold ends,
	// and its probes have answered, as above. An attempt whose request
	// cannot wait that long (its MaxElapsed or ctx deadline comes first;
	// AttemptTimeout does not count, since a held attempt has not started)
	// fails at once with ErrHostHeld. It is the default.
	HoldWait HoldMode = iota
	// HoldFailFast makes new attempts to a held host fail at once with
	// ErrHostHeld, which is not retried.
	HoldFailFast
	// HoldOff keeps no holds: each request learns of a throttle for itself.
	HoldOff
)

// ErrHostHeld is guard.ErrHeld, the one error of an attempt held back, for
// HTTP and gRPC alike: it is matched by the error of an attempt that was
// not sent because its host had asked to be held back (see [HoldMode]); a
// *guard.HeldError says for how long.
var ErrHostHeld = guard.ErrHeld

// noteHold records what resp, the answer to the attempt that
// [call.awaitHold] let go at sent, says of a hold: a 429 or 503 with a
// Retry-After, or a response whose quota is used up (see holdAsked), holds
// the origin back, for at most MaxRetryAfter; any other answer but a
// refusal clears its hold, if the hold began before the attempt was sent:
// an answer to an older request says nothing of the server since.
func (c *call) noteHold(resp *http.Response, sent guard.HoldEpoch) {
	if c.t.Hold == HoldOff {
		return
	}
	if resp.Header.Get(shed.LoadShedHeader) != "" {
		// A load shedder refused this request, its excess: the
		// Retry-After is this request's wait (the retry waits it), and a
		// hold of the whole origin would stop the traffic it still serves.
		return
	}
	if d, now, ok := c.holdAsked(resp); ok {
		c.t.holds().Hold(c.origin(), now, d) // capped at MaxRetryAfter
		c.logHold(true)
		return
	}
	if refusal(resp.StatusCode) {
		return // a refusal that names no wait says nothing of the hold
	}
	if c.t.holds().Held() {
		c.t.holds().Clear(c.origin(), sent)
	}
	c.logHold(false)
}

// awaitHold waits, before an attempt is sent, until its origin's hold
// ends, as the Transport's HoldMode says, then for its turn if a quota
// paces it (awaitPace), and returns the Epoch at which it let the attempt
// go, for noteHold. call is the request's ctx with its MaxElapsed
// deadline, never an attempt's: a hold is weighed against the time the
// whole request has left, and its wait is not an attempt's time.
func (c *call) awaitHold(call context.Context) (guard.HoldEpoch, error) {
	if c.t.Hold == HoldOff {
		return c.t.holds().Epoch(), nil
	}
	if c.t.holds().Held() {
		if err := c.t.holds().Wait(call, c.clk, c.origin(), c.t.Hold == HoldFailFast); err != nil {
			return 0, err
		}
	}
	if err := c.awaitPace(call); err != nil {
		return 0, err
	}
	return c.t.holds().Epoch(), nil
}
