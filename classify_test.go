package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
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
		{"retry after", retry.RetryAfter(errUnavailable, 2*time.Second), retry.Decision{Retry: true, RetryAfter: 2 * time.Second, Reason: "retry after"}},
		{"joined retry after", errors.Join(io.EOF, retry.RetryAfter(errUnavailable, time.Second)), retry.Decision{Retry: true, RetryAfter: time.Second, Reason: "retry after"}},
		{"negative retry after", retry.RetryAfter(errUnavailable, -time.Second), retry.Decision{Retry: true, Reason: "retry after"}},
		{"typed nil", (*codeError)(nil), retry.Decision{Retry: true, Reason: "*retry_test.codeError"}},
		{"error whose Error panics", panickyError{}, retry.Decision{Retry: true, Reason: "retry_test.panickyError"}},

		// Reasons name the kind of failure, never the error's text.
		{"own type, wrapped", fmt.Errorf("get https://u:p@h/?k=v: %w", &codeError{503}), retry.Decision{Retry: true, Reason: "*retry_test.codeError"}},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, retry.Decision{Retry: true, Reason: "connection refused"}},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), retry.Decision{Retry: true, Reason: "connection reset"}},
		{"broken pipe", syscall.EPIPE, retry.Decision{Retry: true, Reason: "broken pipe"}},
		{"unreachable", syscall.ENETUNREACH, retry.Decision{Retry: true, Reason: "network unreachable"}},
		{"DNS", &net.DNSError{Err: "no such host", Name: "secret.internal"}, retry.Decision{Retry: true, Reason: "DNS lookup failed"}},
		{"timeout", os.ErrDeadlineExceeded, retry.Decision{Retry: true, Reason: "timeout"}},
		{"EOF", fmt.Errorf("read body: %w", io.EOF), retry.Decision{Retry: true, Reason: "EOF"}},
		{"unexpected EOF", io.ErrUnexpectedEOF, retry.Decision{Retry: true, Reason: "unexpected EOF"}},
		{"other network error", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("weird")}, retry.Decision{Retry: true, Reason: "network error"}},
		{"joined", errors.Join(errUnavailable, errBadRequest), retry.Decision{Retry: true, Reason: "error"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: c.err}))
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
	assert.Equal(t, "1 attempt, attempts exhausted (retry_test.panickyError)", tr.String())
}
