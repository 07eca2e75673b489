package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stretchr/testify/assert"
)

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprintf("status %d", e.code) }

func TestDefaultClassifier(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  error
		want retry.Decision
	}{
		{"nil", nil, retry.Decision{Reason: "ok"}},
		{"plain", errUnavailable, retry.Decision{Retry: true, Reason: "error"}},
		{"permanent", retry.Permanent(errBadRequest), retry.Decision{Reason: "permanent"}},
		{"wrapped permanent", fmt.Errorf("get: %w", retry.Permanent(errBadRequest)), retry.Decision{Reason: "permanent"}},
		{"joined permanent", errors.Join(io.EOF, retry.Permanent(errBadRequest)), retry.Decision{Reason: "permanent"}},
		{"permanent beats retry-after", retry.Permanent(retry.RetryAfter(errUnavailable, time.Second)), retry.Decision{Reason: "permanent"}},
		{"canceled", context.Canceled, retry.Decision{Reason: "canceled"}},
		{"wrapped canceled", fmt.Errorf("read: %w", context.Canceled), retry.Decision{Reason: "canceled"}},
		{"attempt timeout", context.DeadlineExceeded, retry.Decision{Retry: true, Reason: "attempt timed out"}},
		{"retry after", retry.RetryAfter(errUnavailable, 2*time.Second), retry.Decision{Retry: true, After: 2 * time.Second, Reason: "retry after"}},
		{"joined retry after", errors.Join(io.EOF, retry.RetryAfter(errUnavailable, time.Second)), retry.Decision{Retry: true, After: time.Second, Reason: "retry after"}},
		{"negative retry after", retry.RetryAfter(errUnavailable, -time.Second), retry.Decision{Retry: true, Reason: "retry after"}},
		{"typed nil", (*codeError)(nil), retry.Decision{Retry: true, Reason: "error"}},
		{"error whose Error panics", panickyError{}, retry.Decision{Retry: true, Reason: "error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, retry.DefaultClassifier(c.err))
		})
	}
}

type panickyError struct{}

func (panickyError) Error() string { panic("Error() called") }

func TestMarkersAreNilSafeAndTransparent(t *testing.T) {
	t.Parallel()
	assert.NoError(t, retry.Permanent(nil))
	assert.NoError(t, retry.RetryAfter(nil, time.Second))

	base := &codeError{404}
	for _, err := range []error{retry.Permanent(base), retry.RetryAfter(base, time.Second)} {
		assert.ErrorIs(t, err, base)
		var ce *codeError
		assert.ErrorAs(t, err, &ce)
		assert.Equal(t, 404, ce.code)
		assert.Equal(t, "status 404", err.Error())
	}
}

// The library never calls Error on an op's error while it loops: an error
// whose Error panics is retried and returned like any other.
func TestErrorThatPanicsIsNotFormattedByDo(t *testing.T) {
	t.Parallel()
	tr, err := retry.Do(context.Background(), func(context.Context) error { return panickyError{} }, retry.Policy{MaxAttempts: 1})
	assert.ErrorIs(t, err, panickyError{})
	assert.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, "1 attempt, attempts exhausted", tr.String())
}
