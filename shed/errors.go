package shed

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrShed is matched, with errors.Is, by every error of Acquire that
	// refuses a request for overload; [RetryAfterOf] reads its wait.
	ErrShed = errors.New("shed: overloaded")
	// ErrInvalidOptions is matched by every error of New that refuses its
	// Options; the message names the field.
	ErrInvalidOptions = errors.New("shed: invalid options")
)

// ShedError is the error of a shed request.
type ShedError struct {
	// RetryAfter is the suggested wait, whole seconds, at least one.
	RetryAfter time.Duration
	// Reason says why: "queue full", "queue timeout" or "evicted" (its
	// queue place went to a request of a higher Priority).
	Reason string
}

func (e *ShedError) Error() string {
	return fmt.Sprintf("shed: overloaded (%s); retry after %s", e.Reason, e.RetryAfter)
}

// Is makes a *ShedError match ErrShed.
func (e *ShedError) Is(target error) bool { return target == ErrShed }

// RetryAfterOf returns the wait that a shed error suggests, or 0 when err
// is not one.
func RetryAfterOf(err error) time.Duration {
	var se *ShedError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}
