package retrytest

import (
	"context"

	"github.com/stormguard/retry"
)

// Do runs retry.Do on a fake clock and ends each of its waits at once, so a
// test sees the whole loop, waits included, without sleeping. It uses
// p.Clock if that is a *Clock, and a new one from NewAutoClock otherwise.
// On a Clock from NewClock, which moves only when told, Do advances it
// through each wait from the caller's goroutine while retry.Do runs on
// another, and a panic in op is raised again in the caller's goroutine.
// Either way op may move the clock too, to let its attempts take fake time.
func Do(ctx context.Context, op func(context.Context) error, p retry.Policy) (trace retry.Trace, err error) {
	drive(&p, func() { trace, err = retry.Do(ctx, op, p) })
	return trace, err
}

// DoValue is [Do] for retry.DoValue.
func DoValue[T any](ctx context.Context, op func(context.Context) (T, error), p retry.Policy) (v T, trace retry.Trace, err error) {
	drive(&p, func() { v, trace, err = retry.DoValue(ctx, op, p) })
	return v, trace, err
}

// drive runs call with p.Clock set to a *Clock. On a clock that advances by
// itself, call runs here; on one that does not, it runs on its own
// goroutine while drive advances the clock through each wait until call
// returns.
func drive(p *retry.Policy, call func()) {
	c, ok := p.Clock.(*Clock)
	if !ok {
		c = NewAutoClock()
		p.Clock = c
	}
	if c.auto {
		call()
		return
	}
	var panicV any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { panicV = recover() }()
		call()
	}()
	for {
		select {
		case <-done:
			if panicV != nil {
				panic(panicV)
			}
			return
		case d := <-c.waits:
			c.Add(d)
		}
	}
}
