package retrytest

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry"
)

// Clock is a fake clock for Policy.Clock that tells when Do starts a wait.
//
// Driving a plain *clock.Mock against Do races: a test that calls Add before
// Do has set its timer moves time past a wait that then never ends. Clock
// removes the race: it sends each wait on Waits only once the timer is set,
// so advancing by the received duration always ends that wait.
type Clock struct {
	*clock.Mock
	waits chan time.Duration
}

// NewClock returns a Clock at the Unix epoch.
func NewClock() *Clock {
	// The buffer lets Do run ahead of a test that reads late; a test that
	// starts more unread waits than this blocks Do until it reads.
	return &Clock{Mock: clock.NewMock(), waits: make(chan time.Duration, 1024)}
}

// Timer implements clock.Clock; Do calls it to start a wait.
func (c *Clock) Timer(d time.Duration) *clock.Timer {
	t := c.Mock.Timer(d)
	c.waits <- d
	return t
}

// Waits yields the length of each wait that Do starts on c, once its timer
// is set: c.Add(<-c.Waits()) ends the wait.
func (c *Clock) Waits() <-chan time.Duration {
	return c.waits
}

// Do runs retry.Do on a fake clock and ends each of its waits at once, so a
// test sees the whole loop, waits included, without sleeping. It uses
// p.Clock if that is a *Clock, and a new Clock otherwise. A panic in op is
// raised again in the caller's goroutine. Do moves the clock itself, so op
// must not: a test whose attempts take fake time steps the clock by hand
// through Waits instead.
func Do(ctx context.Context, op func(context.Context) error, p retry.Policy) (trace retry.Trace, err error) {
	drive(&p, func() { trace, err = retry.Do(ctx, op, p) })
	return trace, err
}

// DoValue is [Do] for retry.DoValue.
func DoValue[T any](ctx context.Context, op func(context.Context) (T, error), p retry.Policy) (v T, trace retry.Trace, err error) {
	drive(&p, func() { v, trace, err = retry.DoValue(ctx, op, p) })
	return v, trace, err
}

// drive runs call on its own goroutine with p.Clock set to a *Clock, and
// advances that clock through each wait until call returns.
func drive(p *retry.Policy, call func()) {
	c, ok := p.Clock.(*Clock)
	if !ok {
		c = NewClock()
		p.Clock = c
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
