package limiter

import "time"

// BarFor is how long a request of a level shed keeps the lower levels
// refused: the SRE book's rule that a server sheds a criticality only once
// it sheds every request of the lower ones ("Handling Overload"), kept for
// as long as a Retry-After holds the shed back, so that a lower level does
// not take, while the higher one's clients wait to come back, the slots
// they will need.
const BarFor = time.Second

// turningAway reports whether requests under level were refused by the
// bar within the last BarFor. Under mu.
func (l *Limiter) turningAway(level int, now time.Time) bool {
	b := l.bar.Load()
	return b > 0 && int64(level) >= b && now.UnixNano()-l.barHit < int64(BarFor)
}

// barred reports whether level is under the bar at now, and lifts a bar
// that has lapsed. Under mu.
func (l *Limiter) barred(level int, now time.Time) bool {
	b := l.bar.Load()
	if b == 0 || int64(level) >= b {
		return false
	}
	if now.UnixNano() < l.barUntil {
		l.barHit = now.UnixNano()
		return true
	}
	l.bar.Store(0)
	return false
}

// raise bars the levels under level for BarFor from now: level was shed.
// Under mu.
func (l *Limiter) raise(level int, now time.Time) {
	if level == 0 {
		return
	}
	if until := now.Add(BarFor).UnixNano(); int64(level) > l.bar.Load() || until > l.barUntil && int64(level) == l.bar.Load() {
		l.bar.Store(int64(level))
		l.barUntil = until
	}
}

// refuse counts a request of level refused at now. Under mu.
func (l *Limiter) refuse(level int, now time.Time) {
	l.shed.Add(1)
	l.raise(level, now)
}
