package retry

import (
	"iter"
	"log/slog"
	"strconv"
	"time"
)

// Attempt records one call of op.
type Attempt struct {
	Number int           // 1 for the first call
	Delay  time.Duration // the wait slept before this call; 0 for the first
	// Start is when the call began, on the policy's clock. Do reads no clock
	// before the first call unless MaxElapsed is set, so that a call that
	// succeeds at once costs no clock read: then the first attempt's Start
	// is the zero time and its Duration 0.
	Start    time.Time
	Duration time.Duration // how long op ran
	Err      error         // what op returned
	Reason   string        // the Classifier's Reason; empty on success
}

// Trace is the record of one [Do]: every attempt, its wait and why Do
// stopped. Do returns it by value, whatever the outcome; it implements
// [fmt.Stringer] and [slog.LogValuer] and holds no error text in either, so
// that logging it cannot leak what an error message carries.
type Trace struct {
	first Attempt   // inline, so a call that succeeds at once allocates nothing
	rest  []Attempt // attempts 2 and on
	stop  string    // why Do returned: "ok", "attempts exhausted", …
}

// next returns the slot for the next attempt, for Do to fill in place. At
// the first retry it sizes the storage for every attempt maxAttempts allows,
// up to a bound, so that a Do allocates once however many retries follow.
func (t *Trace) next(maxAttempts int) *Attempt {
	if t.first.Number == 0 {
		return &t.first
	}
	if t.rest == nil {
		n := maxAttempts - 1
		if n <= 0 || n > 16 { // no count limit, or a large one: grow as needed
			n = 16
		}
		t.rest = make([]Attempt, 0, n)
	}
	t.rest = append(t.rest, Attempt{})
	return &t.rest[len(t.rest)-1]
}

// Attempts returns how many times op was called.
func (t Trace) Attempts() int {
	if t.first.Number == 0 {
		return 0
	}
	return 1 + len(t.rest)
}

// All yields every attempt in order.
func (t Trace) All() iter.Seq[Attempt] {
	return func(yield func(Attempt) bool) {
		if t.first.Number == 0 || !yield(t.first) {
			return
		}
		for _, a := range t.rest {
			if !yield(a) {
				return
			}
		}
	}
}

// Last returns the last attempt, or the zero Attempt if op was never called.
func (t Trace) Last() Attempt {
	if len(t.rest) > 0 {
		return t.rest[len(t.rest)-1]
	}
	return t.first
}

// Delays returns the waits slept between attempts: Attempts()−1 of them.
func (t Trace) Delays() []time.Duration {
	if len(t.rest) == 0 {
		return nil
	}
	ds := make([]time.Duration, len(t.rest))
	for i, a := range t.rest {
		ds[i] = a.Delay
	}
	return ds
}

// Elapsed returns the time from the start of the first attempt to the end of
// the last, waits included. When the first attempt's Start was not read (see
// [Attempt.Start]), it counts from the end of the first attempt.
func (t Trace) Elapsed() time.Duration {
	last := t.Last()
	if last.Start.IsZero() {
		return 0
	}
	from := t.first.Start
	if from.IsZero() && len(t.rest) > 0 {
		// The first attempt was untimed: it ended one wait before the second began.
		from = t.rest[0].Start.Add(-t.rest[0].Delay)
	}
	return last.Start.Add(last.Duration).Sub(from)
}

// Reason says why Do returned: "ok" on success, "attempts exhausted",
// "deadline", "retry budget exhausted", "deferred to outer retry loop", the
// ctx's error text, or the Classifier's Reason for an error it would not
// retry.
func (t Trace) Reason() string { return t.stop }

// String returns one line such as "3 attempts, waits [86ms 310ms], 1.2s, ok".
func (t Trace) String() string {
	n := t.Attempts()
	b := strconv.AppendInt(nil, int64(n), 10)
	if n == 1 {
		b = append(b, " attempt"...)
	} else {
		b = append(b, " attempts"...)
	}
	if len(t.rest) > 0 {
		b = append(b, ", waits ["...)
		for i, a := range t.rest {
			if i > 0 {
				b = append(b, ' ')
			}
			b = append(b, roundForHumans(a.Delay).String()...)
		}
		b = append(b, ']')
	}
	if e := t.Elapsed(); e > 0 {
		b = append(b, ", "...)
		b = append(b, roundForHumans(e).String()...)
	}
	b = append(b, ", "...)
	b = append(b, t.stop...)
	return string(b)
}

// LogValue logs the trace as a group: attempts, waits, elapsed, result and
// each attempt's reason.
func (t Trace) LogValue() slog.Value {
	reasons := make([]string, 0, t.Attempts())
	for a := range t.All() {
		if a.Reason != "" {
			reasons = append(reasons, a.Reason)
		}
	}
	return slog.GroupValue(
		slog.Int("attempts", t.Attempts()),
		slog.Any("waits", t.Delays()),
		slog.Duration("elapsed", t.Elapsed()),
		slog.String("result", t.stop),
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
