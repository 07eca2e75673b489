package retrytest

import (
	"context"

	"github.com/stormguard/retry"
)

// Do runs retry.Do on a fake clock and ends each of its waits once it
// starts, so a test sees the whole loop, waits included, without sleeping.
// It uses p.Clock if that is a *Clock, and a new one from NewAutoClock
// otherwise, and runs the call under [Clock.Run], so that calls made at the
// same time on one Clock do not see each other's waits. op may move the
// clock too, with Add, to let its attempts take fake time.
func Do(ctx context.Context, op func(context.Context) error, p retry.Policy) (trace retry.Trace, err error) {
	drive(&p, func() { trace, err = retry.Do(ctx, op, p) })
	return trace, err
}

// DoValue is [Do] for retry.DoValue.
func DoValue[T any](ctx context.Context, op func(context.Context) (T, error), p retry.Policy) (v T, trace retry.Trace, err error) {
	drive(&p, func() { v, trace, err = retry.DoValue(ctx, op, p) })
	return v, trace, err
}

// drive runs call under Run on p.Clock, set to a *Clock.
func drive(p *retry.Policy, call func()) {
	c, ok := p.Clock.(*Clock)
	if !ok {
		c = NewAutoClock()
		p.Clock = c
	}
	c.Run(call)
}
