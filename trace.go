package retry

import (
	"iter"
	"log/slog"
	"slices"
	"time"
)

// Attempt records one call of op.
type Attempt struct {
	Number int           // 1 for the first call
	Wait   time.Duration // slept before this call; 0 for the first
	// Start is when the call began, on the policy's clock. Do reads no clock
	// before the first call unless MaxElapsed or OnDone is set, so that a
	// call that succeeds at once costs no clock read: the first attempt's
	// Start is then the zero time, and its Duration 0.
	Start    time.Time
	Duration time.Duration // how long op ran
	Err      error         // what op returned
	Reason   string        // the Classifier's Reason; empty on success
	Hedged   bool          // started by Hedge while an earlier attempt still ran
}

// Limits on what a Trace keeps of a long call: the first traceHead attempts
// and the last traceTail, so that a loop without a count limit holds a few
// kilobytes however long it runs.
const (
	traceHead = 32
	traceTail = 32
)

// Trace is the record of one [Do]: its attempts, their waits and why Do
// stopped. Do returns it by value, whatever the outcome; it implements
// [fmt.Stringer] and [slog.LogValuer] and holds no error text in either, so
// that logging it cannot leak what an error message carries.
//
// A Trace keeps the first 32 attempts and the last 32; [Trace.Attempts]
// counts them all, and the Number of each kept Attempt shows where a long
// call's middle was left out.
type Trace struct {
	first Attempt   // inline, so a call that succeeds at once allocates nothing
	rest  []Attempt // attempts 2 and on: the head, then a ring of the tail
	n     int       // attempts made
	stop  StopReason
	// firstEnd is when the first attempt ended, when it failed and its
	// start was not read: Elapsed counts from there.
	firstEnd time.Time
}

// next returns the slot for the next attempt, for Do to fill in place. At
// the first retry it sizes the storage for every attempt maxAttempts allows,
// up to a bound, so that a Do allocates once however many retries follow.
func (t *Trace) next(maxAttempts int) *Attempt {
	t.n++
	if t.n == 1 {
		return &t.first
	}
	if t.rest == nil {
		n := maxAttempts - 1
		if n <= 0 || n > 16 { // no count limit, or a large one: grow as needed
			n = 16
		}
		t.rest = make([]Attempt, 0, n)
	}
	if len(t.rest) < traceHead-1+traceTail {
		t.rest = append(t.rest, Attempt{})
		return &t.rest[len(t.rest)-1]
	}
	s := &t.rest[t.slot(t.n)]
	*s = Attempt{}
	return s
}

// slot is the index in rest of attempt k ≥ 2 while it is kept.
func (t *Trace) slot(k int) int {
	if k <= traceHead {
		return k - 2
	}
	return traceHead - 1 + (k-traceHead-1)%traceTail
}

// attempt returns the kept slot of attempt k, or nil if the Trace does not
// keep it (the middle of a long call) or k was never made.
func (t *Trace) attempt(k int) *Attempt {
	switch {
	case k < 1 || k > t.n:
		return nil
	case k == 1:
		return &t.first
	case k <= traceHead || k > t.n-traceTail:
		return &t.rest[t.slot(k)]
	}
	return nil
}

// Attempts returns how many times op was called.
func (t Trace) Attempts() int { return t.n }

// All yields every attempt that the Trace keeps, in order: all of them,
// unless the call made more than 64 (see [Trace]).
func (t Trace) All() iter.Seq[Attempt] {
	return func(yield func(Attempt) bool) {
		if t.n == 0 || !yield(t.first) {
			return
		}
		head := min(len(t.rest), traceHead-1)
		for _, a := range t.rest[:head] {
			if !yield(a) {
				return
			}
		}
		from := max(t.n-traceTail+1, traceHead+1) // the oldest attempt of the tail
		for k := from; k <= t.n; k++ {
			if !yield(t.rest[t.slot(k)]) {
				return
			}
		}
	}
}

// Last returns the last attempt, or the zero Attempt if op was never called.
func (t Trace) Last() Attempt {
	if t.n <= 1 {
		return t.first
	}
	return t.rest[t.slot(t.n)]
}

// Waits returns the waits slept before the attempts that the Trace keeps,
// in order: Attempts()−1 of them, unless the call made more than 64.
func (t Trace) Waits() []time.Duration {
	if t.n <= 1 {
		return nil
	}
	ws := make([]time.Duration, 0, min(t.n, traceHead+traceTail)-1)
	for a := range t.All() {
		if a.Number > 1 {
			ws = append(ws, a.Wait)
		}
	}
	return ws
}

// Elapsed returns the time from the start of the first attempt to the end of
// the last, waits included. When the first attempt's Start was not read (see
// [Attempt.Start]), it counts from the end of the first attempt; a call that
// succeeded at once then has Elapsed 0.
func (t Trace) Elapsed() time.Duration {
	last := t.Last()
	from := t.first.Start
	if from.IsZero() {
		from = t.firstEnd
	}
	if from.IsZero() || last.Start.IsZero() {
		return 0
	}
	return last.Start.Add(last.Duration).Sub(from)
}

// Stop says why Do returned.
func (t Trace) Stop() StopReason { return t.stop }

// String returns one line such as "3 attempts, waits [86ms 310ms], 1.2s, ok"
// or "1 attempt, 404 Not Found: not retried". A failure ends with the stop
// reason and the last attempt's Reason.
func (t Trace) String() string {
	b := appendAttempts(nil, t.n)
	if t.n > 1 {
		b = append(b, ", waits ["...)
		first := true
		for a := range t.All() {
			if a.Number == 1 {
				continue
			}
			if !first {
				b = append(b, ' ')
			}
			if t.n > traceHead+traceTail && a.Number == t.n-traceTail+1 { // the middle was left out
				b = append(b, "… "...)
			}
			first = false
			b = append(b, roundForHumans(a.Wait).String()...)
		}
		b = append(b, ']')
	}
	if e := t.Elapsed(); e > 0 {
		b = append(b, ", "...)
		b = append(b, roundForHumans(e).String()...)
	}
	b = append(b, ", "...)
	return string(t.appendOutcome(b))
}

// appendOutcome appends why Do stopped, and after what.
func (t Trace) appendOutcome(b []byte) []byte {
	reason := t.Last().Reason
	switch {
	case t.stop == StopNotRetryable && reason != "":
		b = append(b, reason...)
		return append(b, ": not retried"...)
	case t.stop == StopSuccess || reason == "":
		return append(b, t.stop.String()...)
	}
	b = append(b, t.stop.String()...)
	b = append(b, " ("...)
	b = append(b, reason...)
	return append(b, ')')
}

// LogValue logs the trace as a group: attempts, waits (rounded as in
// String), elapsed, stop, and each attempt's reason.
func (t Trace) LogValue() slog.Value {
	reasons := make([]string, 0, min(t.n, traceHead+traceTail))
	waits := make([]string, 0, min(t.n, traceHead+traceTail))
	for a := range t.All() {
		if a.Reason != "" {
			reasons = append(reasons, a.Reason)
		}
		if a.Number > 1 {
			waits = append(waits, roundForHumans(a.Wait).String())
		}
	}
	return slog.GroupValue(
		slog.Int("attempts", t.n),
		slog.Any("waits", waits),
		slog.Duration("elapsed", roundForHumans(t.Elapsed())),
		slog.String("stop", t.stop.String()),
		slog.Any("reasons", reasons),
	)
}

// roundForHumans keeps three significant digits or so: 86.123456ms → 86ms.
func roundForHumans(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// NewTrace returns the Trace of a call whose attempts were made outside
// Do: by a loop that outlives one process, such as a durable outbox that
// keeps its attempts in a journal, and reports them as Do would.
//
// attempts are taken in order. Their Numbers say which attempts they are:
// one whose Number is not past the one before it is numbered next, and a
// gap stands for attempts left out, as a Trace leaves out the middle of a
// long call, so that a caller that kept the first 32 attempts and the last
// 32 gets back the Trace that Do would have kept. Attempts in a gap that
// such a Trace would keep are empty but for their Number. The Trace keeps
// at most 64 attempts, whatever it is given.
func NewTrace(stop StopReason, attempts []Attempt) Trace {
	t := Trace{stop: stop}
	for _, a := range attempts {
		t.add(a)
	}
	return t
}

// Add records attempt a of a call made outside Do, as NewTrace does, so
// that a loop that outlives a process (a journal, a job's row) keeps one
// Trace and adds to it at each step: an a with the Number of the last
// attempt replaces it (its outcome, once known), one with a greater Number
// comes next, a gap standing for attempts left out, and any other is
// numbered next. Copies of t made before stay as they were.
func (t *Trace) Add(a Attempt) {
	t.rest = slices.Clone(t.rest) // copies share rest: never write theirs
	if a.Number == t.n && t.n > 0 {
		*t.attempt(t.n) = a
		return
	}
	t.add(a)
}

// SetStop sets why the call stopped: StopNone while it goes on.
func (t *Trace) SetStop(s StopReason) { t.stop = s }

// add is Add on a Trace that shares no storage, without the replace.
func (t *Trace) add(a Attempt) {
	if a.Number <= t.n {
		a.Number = t.n + 1
	}
	for t.n < a.Number-1 {
		// Past the head, the tail is a ring of traceTail slots: only the
		// last of the missing attempts can still be in it.
		if t.n >= traceHead && a.Number-1-t.n > traceTail {
			t.n = a.Number - 1 - traceTail
		}
		s := t.next(0)
		*s = Attempt{Number: t.n}
	}
	*t.next(0) = a
}
