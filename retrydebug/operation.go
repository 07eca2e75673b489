package retrydebug

import (
	"sync"
	"time"

	"github.com/stormguard/retry"
)

// maxWaits is how many waits a recorded call keeps: a fixed array, so that
// recording a call never allocates. Longer calls keep their first waits and
// say that the rest were left out.
const maxWaits = 16

// retryBuckets is the length of an operation's retries-per-call counts: 0,
// 1, … retryBuckets−2 retries, then that many or more.
const retryBuckets = 8

// stopSlots has room for every StopReason the core defines, and more, so
// that a reason added later is counted (under its String) without a change
// here.
const stopSlots = 16

// answer is how a call was answered, besides its Trace: an HTTP status, or
// a gRPC status code, or neither (a retry.Do, or a request with no
// response).
type answer struct {
	status int    // HTTP status; 0 for none
	grpc   bool   // code is set
	code   uint32 // gRPC status code
}

// callRecord is what the ring keeps of one call: numbers and fixed texts,
// never the Trace itself, whose attempts hold the errors.
type callRecord struct {
	at        time.Time
	name      string // the operation's name; in the overflow bucket, the call's own
	reason    string // the last attempt's Reason: a short fixed text, never an error's
	elapsed   time.Duration
	attempts  int
	answer    answer
	stop      retry.StopReason
	nwaits    uint8
	truncated bool // the call had more waits than maxWaits, or than its Trace kept
	waits     [maxWaits]time.Duration
}

// operation holds one name's totals and the ring of its last calls. Its
// mutex is held for a few dozen nanoseconds per call: a copy into the ring
// and some increments.
type operation struct {
	name  string
	other bool // the overflow bucket

	mu       sync.Mutex
	ring     []callRecord // allocated once, when the operation is made
	next     int          // ring slot of the next call
	calls    uint64
	attempts uint64
	retried  uint64 // retries, summed per call: a call with no attempt adds none
	retries  [retryBuckets]uint64
	stops    [stopSlots]uint64
	elapsed  histogram
}

func newOperation(name string, other bool, ringSize int) *operation {
	return &operation{name: name, other: other, ring: make([]callRecord, ringSize)}
}

// record adds one finished call. name is the call's own name, kept for the
// overflow bucket.
func (o *operation) record(name string, t *retry.Trace, ans answer, at time.Time) {
	attempts := t.Attempts()
	elapsed := t.Elapsed()
	last := t.Last()

	o.mu.Lock()
	defer o.mu.Unlock()
	r := &o.ring[o.next]
	o.next++
	if o.next == len(o.ring) {
		o.next = 0
	}
	r.at, r.name, r.reason = at, name, last.Reason
	r.elapsed, r.attempts, r.answer, r.stop = elapsed, attempts, ans, t.Stop()
	r.nwaits, r.truncated = 0, false
	if attempts > 1 {
		for a := range t.All() {
			if a.Number == 1 {
				continue
			}
			if int(r.nwaits) == maxWaits {
				break
			}
			r.waits[r.nwaits] = a.Wait
			r.nwaits++
		}
		r.truncated = int(r.nwaits) < attempts-1
	}

	o.calls++
	o.attempts += uint64(attempts)
	o.retried += uint64(max(attempts-1, 0))
	o.retries[min(max(attempts-1, 0), retryBuckets-1)]++
	o.stops[min(int(t.Stop()), stopSlots-1)]++
	o.elapsed.add(elapsed)
}
