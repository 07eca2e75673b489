package retryconfig

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Subscribe calls f after each update that l accepts, by [Live.Update] or
// [Live.Override], with the new version and Config, and returns a func
// that stops the calls. A rejected update calls nothing.
//
// f is called synchronously, by the goroutine that made the update, before
// Update or Override returns and while they hold l's update lock: so the
// calls come in the order of the versions, one at a time (never two at
// once, for one f or for several), and the Config f gets is the current
// one for as long as f runs. Keep f quick (hand the work to a goroutine
// of your own if it is not), and do not call Update or Override from it,
// which would wait for the lock forever; calling Policy, Config, Version,
// Subscribe and cancel is fine. Subscribers are called in the order they
// subscribed. A panic in f goes up through the Update that called it,
// after the new Config has been made current.
//
// cancel may be called any number of times, from any goroutine, f
// included. An update that begins after cancel has returned does not call
// f; one under way in another goroutine may still call it, once.
//
// To follow the Config without missing an update, subscribe first and
// then read [Live.Config]: an update either is in what Config returns, or
// is reported to f, or both.
func (l *Live) Subscribe(f func(version uint64, cfg *Config)) (cancel func()) {
	if f == nil {
		panic("retryconfig: Live.Subscribe with a nil func")
	}
	s := &subscriber{f: f}
	l.subs.add(s)
	return func() {
		if !s.done.Swap(true) {
			l.subs.remove(s)
		}
	}
}

// subscribers are the funcs that a Live calls after each accepted update.
// The list is copied on every change, so that notify can call them from a
// snapshot without holding mu, and a subscriber can cancel, or subscribe
// another, from its own call.
type subscribers struct {
	mu   sync.Mutex
	list []*subscriber // never modified in place
}

type subscriber struct {
	f    func(version uint64, cfg *Config)
	done atomic.Bool // cancelled: checked before each call
}

func (ss *subscribers) add(s *subscriber) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = append(slices.Clip(ss.list), s)
}

func (ss *subscribers) remove(s *subscriber) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.list = slices.DeleteFunc(slices.Clone(ss.list), func(o *subscriber) bool { return o == s })
}

// notify calls every subscriber that has not cancelled. Live calls it
// under its update lock, after making snap current.
func (ss *subscribers) notify(snap *snapshot) {
	ss.mu.Lock()
	list := ss.list
	ss.mu.Unlock()
	for _, s := range list {
		if !s.done.Load() {
			s.f(snap.version, &snap.cfg)
		}
	}
}
