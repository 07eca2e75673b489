package outbox

import "errors"

// The errors of this package never quote a key or a payload: a key is a
// capability (whoever holds it can replay the op's result), and errors get
// logged.
var (
	// ErrInvalidOp is matched by the error Enqueue returns for an op it
	// cannot take: a bad key, an empty Kind, a payload over MaxPayload, a
	// NotAfter already past.
	ErrInvalidOp = errors.New("outbox: invalid op")

	// ErrKeyConflict is returned by Enqueue for a key already enqueued with
	// another Kind or Payload. The same op enqueued again is not an error:
	// Enqueue returns its key, and it runs once.
	ErrKeyConflict = errors.New("outbox: key already used for another op")

	// ErrFailed is matched by the error Wait returns for an op that
	// failed (a dead letter): the error wraps the last attempt's error
	// too, and the Result keeps the details.
	ErrFailed = errors.New("outbox: op failed")

	// ErrUnknownKey is returned by Wait for a key this Outbox does not hold.
	ErrUnknownKey = errors.New("outbox: unknown key")

	// ErrDuplicate is what a Journal's Add returns for a key it holds
	// already.
	ErrDuplicate = errors.New("outbox: journal holds the key already")

	// ErrLocked is matched by the error of OpenFile on a journal that
	// another FileJournal, in this process or another, has open.
	ErrLocked = errors.New("outbox: journal is open elsewhere")

	// ErrClosed is returned by a FileJournal after Close.
	ErrClosed = errors.New("outbox: journal is closed")

	// ErrCorrupt is matched by the error of OpenFile on a file that is not a
	// journal, or a journal damaged before its tail, which a crash cannot do:
	// OpenFile then leaves the file as it is, and its error says where.
	ErrCorrupt = errors.New("outbox: journal is corrupt")

	// ErrRunning is returned by Run while another Run of the same Outbox
	// runs.
	ErrRunning = errors.New("outbox: Run is already running")
)

// failedError is Wait's error for an op that failed: it says why in the
// Outbox's fixed words (the Reason), and unwraps to ErrFailed and to the
// last attempt's error, whose text it does not repeat, since it may quote
// what a log should not hold.
type failedError struct {
	reason string
	last   error
}

func (e *failedError) Error() string   { return ErrFailed.Error() + ": " + e.reason }
func (e *failedError) Unwrap() []error { return []error{ErrFailed, e.last} }
