package retry

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
	return t
}
