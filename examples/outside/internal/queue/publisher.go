package queue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// defaultMaxRetryAfter is the cap of a zero Options.MaxRetryAfter.
const defaultMaxRetryAfter = 30 * time.Second

// Client is the message-queue client a [Publisher] wraps: one Publish
// sends msg to topic once. Its errors are told apart by the Policy's
// Classifier ([Classify] knows [*OverloadedError], [ErrBadMessage] and
// [ErrUnavailable]).
type Client interface {
	Publish(ctx context.Context, topic string, msg []byte) error
}

// Options configures [New]. A zero field stands for the default in
// brackets.
type Options struct {
	// Policy is the retry rule of each publish [the zero Policy: 4
	// attempts, 200ms doubling to 5s]. Its Classifier decides [Classify];
	// its Clock times the waits, the deadlines and the holds; OnRetry and
	// OnDone are called as retry.Do calls them. Its own Budget, Breaker
	// and Throttle, when set, are shared by every topic.
	Policy retry.Policy

	// Guards gives each topic, by name, the Budget, Breaker and Throttle
	// that Policy lacks [none]; Guards.Holds keeps the topics' holds [a
	// Holds of the Publisher's own].
	Guards guard.Keyed

	// MaxRetryAfter caps the wait an OverloadedError asks for, and how long
	// it holds its topic back [30s].
	MaxRetryAfter time.Duration

	// Logger, if set, logs each change of state of the breakers and the
	// throttles of Policy and Guards [none].
	Logger *slog.Logger
}

// Publisher publishes messages through a [Client], retrying as its Policy
// says, with guards per topic. Make one with [New]; it is safe for
// concurrent use.
type Publisher struct {
	client Client
	policy retry.Policy // the caller's, its Classifier wrapped to cap RetryAfter
	guards guard.Keyed  // Holds is never nil
	cap    time.Duration
	log    *slog.Logger
	stops  []func() // the watchers'
}

// New returns a Publisher that sends through c, or an error if c is nil
// or o cannot be used (an invalid Policy's error matches
// retry.ErrInvalidPolicy). Call Close when done with it.
func New(c Client, o Options) (*Publisher, error) {
	switch {
	case c == nil:
		return nil, errors.New("queue: New needs a Client")
	case o.MaxRetryAfter < 0:
		return nil, errors.New("queue: Options.MaxRetryAfter is negative")
	}
	if err := o.Policy.Validate(); err != nil {
		return nil, err
	}
	p := &Publisher{client: c, policy: o.Policy, guards: o.Guards, cap: o.MaxRetryAfter, log: o.Logger}
	if p.cap == 0 {
		p.cap = defaultMaxRetryAfter
	}
	if p.guards.Holds == nil {
		p.guards.Holds = new(guard.Holds)
	}
	classify := o.Policy.Classifier
	if classify == nil {
		classify = Classify
	}
	// A broker's wait is bounded here, once, whatever the Classifier: Next
	// waits RetryAfter as it is.
	p.policy.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
		d := classify(ctx, a)
		d.RetryAfter = min(d.RetryAfter, p.cap)
		return d
	}
	if p.log != nil {
		if err := p.watch(); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Close stops the Publisher's watchers. It does not close the Client.
func (p *Publisher) Close() {
	for _, stop := range p.stops {
		stop()
	}
	p.stops = nil
}

// Publish sends msg to topic, retrying as the Policy says, and returns the
// Trace of its attempts with the error that ended them (nil on success),
// as retry.Do does, and hands both to the Policy's OnDone.
//
// It stops on the first of: success; an error the Classifier will not
// retry, returned as it is; MaxAttempts used up (retry.ErrExhausted); a
// next wait, or a hold of the topic, that would pass MaxElapsed or ctx's
// deadline (retry.ErrDeadline; a hold's error matches guard.ErrHeld too);
// a refusal by the topic's Budget (retry.ErrBudgetExhausted), Throttle
// (retry.ErrThrottled) or Breaker (retry.ErrBreakerOpen), before an
// attempt that would not be let through is sent; or ctx ending (the error
// matches ctx.Err()). Each but the first two is a *retry.StopError that
// also matches the last attempt's error.
func (p *Publisher) Publish(ctx context.Context, topic string, msg []byte) (retry.Trace, error) {
	pol := p.policy.WithGuards(&p.guards, topic)
	var attempts []retry.Attempt
	var g guard.Call
	g.Start(pol.Throttle, pol.Breaker)
	defer g.Abandon() // a panic counts as nothing, and gives back a half-open probe
	stop, err := p.loop(ctx, &pol, &g, topic, msg, &attempts)
	g.End()
	t := retry.NewTrace(stop, attempts)
	if pol.OnDone != nil {
		pol.OnDone(ctx, t, err)
	}
	return t, err
}

// loop makes the attempts of one Publish, through g, and appends each to
// attempts; it returns why it stopped, and the error to return. It is
// Do's loop, piece by piece: Policy.Own, Admit, Next, Succeeded, Sleep.
func (p *Publisher) loop(ctx context.Context, pol *retry.Policy, g *guard.Call, topic string, msg []byte, attempts *[]retry.Attempt) (retry.StopReason, error) {
	clk := pol.Clock
	if ctx.Err() != nil {
		return retry.StopContextDone, ended(ctx, pol, 0, nil)
	}
	// A retrying client below (a retry.Do, a retryhttp.Transport) makes one
	// attempt per attempt of this loop, and leaves its guards to it.
	opCtx, done := pol.Own(ctx)
	defer done()
	pr := retry.Progress{Deadline: pol.Deadline(pol.Now()), Guard: g}
	call := opCtx // the call's ctx: ended at MaxElapsed too
	if !pr.Deadline.IsZero() {
		var cancel context.CancelFunc
		call, cancel = pol.WithDeadline(opCtx, pr.Deadline)
		defer cancel()
	}
	var last error
	var wait time.Duration
	for n := 1; ; n++ {
		if err := p.guards.Holds.Wait(call, clk, topic, false); err != nil {
			return p.held(ctx, pol, n-1, last, err)
		}
		if v := pol.Admit(&pr, last); v.Stop != retry.StopNone {
			return v.Stop, v.Err
		}
		sent := p.guards.Holds.Epoch()
		a := retry.Attempt{Number: n, Wait: wait, Start: pol.Now()}
		a.Err = p.attempt(call, pol, topic, msg)
		a.Duration = pol.Now().Sub(a.Start)
		p.noteHold(pol, topic, sent, a.Err)
		if a.Err == nil {
			pol.Succeeded(ctx, &pr) // the Call and the Budget; Next tells them of failures
			*attempts = append(*attempts, a)
			return retry.StopSuccess, nil
		}
		pr.Attempts = n
		v := pol.Next(ctx, &a, &pr) // classifies, tells g and the Budget, calls OnRetry
		*attempts = append(*attempts, a)
		if v.Stop != retry.StopNone {
			return v.Stop, v.Err
		}
		last, wait = a.Err, v.Wait
		if !pol.Sleep(ctx, wait) {
			return retry.StopContextDone, ended(ctx, pol, n, last)
		}
	}
}

// attempt sends msg once, under the Policy's AttemptTimeout if it has one.
func (p *Publisher) attempt(call context.Context, pol *retry.Policy, topic string, msg []byte) error {
	if pol.AttemptTimeout <= 0 {
		return p.client.Publish(call, topic, msg)
	}
	actx, cancel := pol.WithDeadline(call, pol.Now().Add(pol.AttemptTimeout))
	defer cancel()
	return p.client.Publish(actx, topic, msg)
}

// ended returns the error of a call whose ctx ended after n attempts, the
// last of which failed with last. A *retry.StopError keeps ctx's error in
// a field of its own that only package retry can set, so Next makes it:
// with ctx ended, it stops at once, first of all, and tells nothing to
// anyone (pr carries no Guard, and the Budget is not asked).
func ended(ctx context.Context, pol *retry.Policy, n int, last error) error {
	a := retry.Attempt{Number: max(n, 1), Err: last}
	if last == nil {
		a.Err = context.Cause(ctx) // Next wants an error; it is only kept
	}
	return pol.Next(ctx, &a, &retry.Progress{Attempts: n}).Err
}
