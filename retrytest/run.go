package retrytest

import (
	"time"
)

// idleTick and idleTicks set how long nothing must happen on a Clock, in
// real time, while calls run under Run, before Run moves it to its next
// deadline: half a second, in ticks, so that a process that was not
// scheduled for a while (a loaded CI machine) gets ticks to catch up
// before time jumps. Shorter spells timed out healthy calls: 200
// concurrent gRPC calls under -race on a loaded machine can go 60ms
// without touching the clock.
const (
	idleTick  = 50 * time.Millisecond
	idleTicks = 10
)

// Run calls f, on the calling goroutine, as one of the calls that c keeps
// moving until they return, and returns when f does (a panic in f goes on
// up, after c has let go of f). Any number of goroutines may call Run on
// one Clock at once: it is how concurrent calls share a Clock.
//
// While calls run under Run, time moves by itself in two ways. Once every
// one of them is in a wait of Do (a backoff, a server's Retry-After), time
// jumps to the end of the earliest wait, as it does in a testing/synctest
// bubble: a call never sees the waits of another, and the Trace of each
// shows its own waits only. And when nothing happens on c for half a
// second of real time (no wait or deadline set, ended or released), as
// when an attempt hangs on a real server, time jumps to the next deadline
// set on c (an AttemptTimeout, a MaxElapsed), so that the attempt ends by
// its timeout and a test cannot hang for its whole -timeout. A call that
// hangs with no deadline on c hangs as it would in production.
//
// Between those jumps time stands still, so the real time an attempt takes
// costs no fake time; an attempt to a real server that takes longer than
// that idle spell may be timed out as if it had hung. Waits under Run are
// not sent on Waits. Add still moves time, from any goroutine.
func (c *Clock) Run(f func()) {
	c.enter()
	defer c.leave()
	f()
}

func (c *Clock) enter() {
	// A call joins only between moves of time: one that joined while
	// settle moved time, after it counted the calls that wait, would see
	// time move while it runs, and count another call's wait as its own.
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users++
	if c.users == 1 {
		c.watch = &idleWatch{stop: make(chan struct{}), done: make(chan struct{})}
		go c.watch.run(c)
	}
}

func (c *Clock) leave() {
	c.mu.Lock()
	c.users--
	var w *idleWatch
	if c.users == 0 {
		w, c.watch = c.watch, nil
	}
	c.mu.Unlock()
	if w != nil {
		close(w.stop)
		<-w.done
		return
	}
	c.settle() // the calls left may all be waiting
}

// running reports whether any call runs under Run.
func (c *Clock) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users > 0
}

// settle moves time to the end of the earliest wait if every call under
// Run is in a wait.
func (c *Clock) settle() {
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	if c.users == 0 || c.waiting < c.users {
		c.mu.Unlock()
		return
	}
	var target time.Time
	for _, t := range c.timers { // by deadline: the first wait ends first
		if t.wait {
			target = t.deadline
			break
		}
	}
	c.mu.Unlock()
	c.advanceTo(target)
}

// idleWatch moves a Clock to its next deadline when nothing has happened
// on it for idleTicks ticks while calls run under Run.
type idleWatch struct {
	stop, done chan struct{}
}

func (w *idleWatch) run(c *Clock) {
	defer close(w.done)
	tick := time.NewTicker(idleTick)
	defer tick.Stop()
	var last uint64
	idle := 0
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		events := c.events
		var next time.Time
		for _, t := range c.timers {
			if !t.wait { // a deadline; waits end when every call waits
				next = t.deadline
				break
			}
		}
		c.mu.Unlock()
		if events != last {
			last, idle = events, 0
			continue
		}
		if idle++; idle < idleTicks || next.IsZero() {
			continue
		}
		c.advance.Lock()
		c.advanceTo(next)
		c.advance.Unlock()
		idle = 0
	}
}
