package retry

import (
	"context"
	"time"
)

// timer is a stoppable timer on the policy's clock: a channel that fires
// once, nil when not armed.
type timer struct {
	c      <-chan struct{}
	d      time.Duration
	cancel context.CancelFunc
}

// arm sets t to fire after d. A wait (between attempts) and a deadline (the
// hedge delay) go to the clock's two methods, so that a fake can tell them
// apart.
func (t *timer) arm(clk Clock, d time.Duration, wait bool) {
	t.stop()
	t.d = d
	var ctx context.Context
	switch {
	case clk == nil:
		ctx, t.cancel = context.WithTimeout(context.Background(), d)
	case wait:
		ctx, t.cancel = clk.WithTimeout(context.Background(), d)
	default:
		ctx, t.cancel = clk.WithDeadline(context.Background(), clk.Now().Add(d))
	}
	t.c = ctx.Done()
}

func (t *timer) armed() bool { return t.c != nil }

func (t *timer) stop() {
	if t.cancel != nil {
		t.cancel()
	}
	t.c, t.cancel = nil, nil
}
