package outbox

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/stormguard/retry"
)

// Op is one durable intent: a call that must happen once, even if the
// process dies while making it.
type Op struct {
	// Key is the op's idempotency key. Enqueue makes one when it is empty
	// (128 random bits from crypto/rand), and it never changes after: every
	// attempt, in this process or after a restart, carries the same key.
	// A key is 1 to 255 bytes of visible ASCII, without '"' or '\'.
	Key string

	// Kind names the handler that runs the op (see [Outbox.Handle]).
	Kind string

	// Payload is what the handler needs to make the call. It is written to
	// the journal as it is, so it must hold no credential: the handler adds
	// those at send time.
	Payload []byte

	// NotAfter is the time after which the op is given up and recorded as
	// failed [zero: Enqueue's time plus Options.Horizon, 24h by default, the
	// time Stripe and package idempotency keep a key].
	NotAfter time.Time
}

// MaxPayload is the largest Payload Enqueue accepts, so that one op cannot
// make the journal's records, or its recovery, unbounded.
const MaxPayload = 16 << 20

// maxKeyLen bounds a key; package idempotency accepts keys this long.
const maxKeyLen = 255

// newKey returns a fresh key: 128 bits of crypto/rand in base32 (26 chars).
func newKey() string { return rand.Text() }

// validKey reports why k cannot be a key, or nil.
func validKey(k string) error {
	if len(k) == 0 || len(k) > maxKeyLen {
		return fmt.Errorf("%w: key of %d bytes (want 1 to %d)", ErrInvalidOp, len(k), maxKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return fmt.Errorf("%w: key byte %d is not visible ASCII (or is a quote or backslash)", ErrInvalidOp, i)
		}
	}
	return nil
}

// State is where an op is in its life.
type State uint8

const (
	// Pending: the op waits for its next attempt, or is making it.
	Pending State = iota
	// Succeeded: a handler call returned nil. The op never runs again.
	Succeeded
	// Failed: the op was given up (a permanent error, attempts used up, or
	// NotAfter passed); it is a dead letter with its last error, and never
	// runs again by itself.
	Failed
)

func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Entry is what a [Journal] keeps of one op: the op and its progress. The
// Outbox writes a whole Entry each time the op's progress changes.
type Entry struct {
	Op       Op            // as enqueued, NotAfter filled in
	State    State         // where the op is
	Attempts int           // handler calls started, across every process
	Next     time.Time     // earliest start of the next attempt (Pending)
	LastWait time.Duration // the jittered wait drawn before Next
	Enqueued time.Time     // when Enqueue wrote the op
	Finished time.Time     // when the op succeeded or failed
	// Reason is the Classifier's short, secret-free reason for the last
	// failure ("permanent", "attempts used up", "not after", …).
	Reason string
	// LastError is the text of the last attempt's error, at most 1 KiB, so
	// that a dead letter can be inspected. Like Payload, it is written to
	// the journal: the journal is as sensitive as the ops it holds.
	LastError string
	// Trace is the op's attempts across every process and re-drive, as
	// retry.Do keeps them (the first 32 and the last 32), with why it
	// stopped: StopSuccess, StopNotRetryable (a permanent error),
	// StopExhausted (attempts used up), StopDeadline (NotAfter passed), or
	// StopNone while the op is pending. Each attempt has its Number, the
	// Wait drawn before it, its Start, its Duration and the Classifier's
	// Reason; never its error (Err is nil), so a Trace holds no secret.
	// An attempt whose outcome was never written (its process died) has
	// the Reason "no outcome recorded".
	Trace retry.Trace

	// Lease is the claim a [SharedJournal] holds the op under, set by its
	// Claim and passed back by the Outbox on each Update, so that a process
	// whose lease another took cannot write over the new owner. It is empty
	// for a journal that one process owns, such as [FileJournal], and for an
	// op that no process holds.
	Lease string
}

// maxErrorText bounds Entry.LastError.
const maxErrorText = 1 << 10

func errorText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
	}
	return s
}

// Result is the outcome of one op, as [Outbox.Wait] reports it.
type Result struct {
	Key      string
	State    State  // Succeeded or Failed
	Attempts int    // handler calls, across every process
	Reason   string // why it failed; empty on success
	// Err is nil on success. On failure it is the last attempt's error: the
	// error itself when the attempt ran in this process, or an error with
	// its saved text after a restart.
	Err error
}

// NewEntry returns the Entry that Enqueue writes for op at now: a fresh key
// when op.Key is empty, NotAfter set to now plus horizon (24h when horizon
// is zero) when zero, the payload copied, and the op checked as Enqueue
// checks it (an error matching [ErrInvalidOp]). A journal that enqueues an
// op itself, such as in the caller's database transaction, uses it so that
// its ops follow the Outbox's rules.
func NewEntry(op Op, now time.Time, horizon time.Duration) (Entry, error) {
	if horizon < 0 {
		return Entry{}, fmt.Errorf("%w: negative horizon %v", ErrInvalidOp, horizon)
	}
	if horizon == 0 {
		horizon = 24 * time.Hour
	}
	op, err := prepare(op, now, horizon)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Op: op, State: Pending, Next: now, Enqueued: now}, nil
}

// prepare fills in and checks op as Enqueue takes it at now.
func prepare(op Op, now time.Time, horizon time.Duration) (Op, error) {
	if op.Key == "" {
		op.Key = newKey()
	}
	switch {
	case validKey(op.Key) != nil:
		return Op{}, validKey(op.Key)
	case op.Kind == "":
		return Op{}, fmt.Errorf("%w: empty Kind", ErrInvalidOp)
	case len(op.Payload) > MaxPayload:
		return Op{}, fmt.Errorf("%w: payload of %d bytes, over MaxPayload", ErrInvalidOp, len(op.Payload))
	}
	if op.NotAfter.IsZero() {
		op.NotAfter = now.Add(horizon)
	} else if !op.NotAfter.After(now) {
		return Op{}, fmt.Errorf("%w: NotAfter %v has passed", ErrInvalidOp, op.NotAfter)
	}
	op.Payload = bytes.Clone(op.Payload)
	return op, nil
}
