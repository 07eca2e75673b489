package retryconfig

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/stormguard/retry"
)

// Live holds the current Config of a running service and swaps it, whole
// and atomically, when a new document comes: on a SIGHUP, a file change, or
// a push from a config service.
//
// A call takes its policy once, at its start, with [Live.Policy]; an update
// never changes a call in flight, which goes on with the policy it took. A
// rejected update changes nothing: every call keeps the last good Config.
// Guards survive an update: a budget, breaker or throttle whose fields did
// not change is the same guard.Budget, guard.Breaker or guard.Throttle
// afterwards, with its state, so that a reload during an outage does not
// hand every client a full bucket, close an open breaker or forget what a
// throttle has counted.
//
// [Live.Subscribe] calls a func after each accepted update, in order.
//
// A Live is safe for concurrent use. Policy is a lock-free load of an
// immutable snapshot; updates are serialized among themselves.
type Live struct {
	cur  atomic.Pointer[snapshot]
	mu   sync.Mutex // serializes Update, so that versions and guards follow one history
	ovr  *Overrides // under mu: applied to every Config Update accepts
	subs subscribers
}

type snapshot struct {
	cfg     Config  // a copy, so that Policy follows one pointer
	base    *Config // cfg before the Overrides, for a later Override
	version uint64
}

// NewLive returns a Live that holds cfg as version 1. A nil cfg holds no
// policies. If cfg came from [ParseServiceConfig], Update reads service
// configs too; otherwise it reads documents of our format.
func NewLive(cfg *Config) *Live {
	if cfg == nil {
		cfg = &Config{}
	}
	l := &Live{}
	l.cur.Store(&snapshot{cfg: *cfg, base: cfg, version: 1})
	return l
}

// Update parses data, as [Parse] does (or as [ParseServiceConfig] does, if
// the first Config came from it), and makes it the current Config. If data
// is invalid, it returns the error and keeps the current Config. The new
// Config takes over every budget, breaker and throttle of the old one whose
// fields it keeps. Update calls the subscribers (see [Live.Subscribe])
// before it returns.
func (l *Live) Update(data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.snap()
	parse := Parse
	if old.cfg.service {
		parse = ParseServiceConfig
	}
	base, err := parse(data)
	if err != nil {
		return err
	}
	cfg := base
	if l.ovr != nil {
		if cfg, err = l.ovr.Apply(base); err != nil {
			return err
		}
	}
	l.subs.notify(l.store(old, cfg, base))
	return nil
}

// Override applies o to the current Config, and to every Config that
// Update accepts from now on, so that a flag or an environment variable
// keeps its precedence over the file across reloads. It counts as an
// update: it returns an error and changes nothing if o makes a policy
// invalid, and calls the subscribers when it does not. Later changes to o
// have no effect; call Override again. Override(nil) removes the
// overrides.
func (l *Live) Override(o *Overrides) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o == nil {
		o = &Overrides{} // none: the file alone
	}
	o = &Overrides{env: slices.Clone(o.env), flags: slices.Clone(o.flags)}
	old := l.snap()
	cfg, err := o.Apply(old.base)
	if err != nil {
		return err
	}
	l.ovr = o
	l.subs.notify(l.store(old, cfg, old.base))
	return nil
}

// store publishes cfg, made from base, after old, carrying over old's
// guards, and returns the new snapshot.
func (l *Live) store(old *snapshot, cfg, base *Config) *snapshot {
	cfg.budgets.carry(old.cfg.budgets)
	cfg.breakers.carry(old.cfg.breakers)
	cfg.throttles.carry(old.cfg.throttles)
	cfg.bind() // cfg is not published yet: binding its policies is safe
	snap := &snapshot{cfg: *cfg, base: base, version: old.version + 1}
	l.cur.Store(snap)
	return snap
}

// emptySnapshot is what the zero Live holds: no policies, version 0.
var emptySnapshot = &snapshot{base: &Config{}}

// snap is the current snapshot; the zero Live's is empty, so that it is
// usable as it is: Policy gives the zero Policy and Update reads our
// format.
func (l *Live) snap() *snapshot {
	if s := l.cur.Load(); s != nil {
		return s
	}
	return emptySnapshot
}

// Policy returns the current Config's Policy(name). It does not lock or
// allocate.
func (l *Live) Policy(name string) retry.Policy {
	return l.snap().cfg.Policy(name)
}

// Config returns the current Config, for what Policy does not tell (status
// codes, hedging). Take it once per call, as Policy is taken.
func (l *Live) Config() *Config {
	return &l.snap().cfg
}

// Version counts the accepted configs: 1 for the first, one more for each
// accepted Update. Report it (on a debug page, as a metric) to see which
// config a fleet runs.
func (l *Live) Version() uint64 {
	return l.snap().version
}
