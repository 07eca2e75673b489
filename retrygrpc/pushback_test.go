package retrygrpc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A pushback of 500ms is the least wait before the next attempt: with a
// Jitter that adds nothing the wait is exactly 500ms; with full jitter it is
// 500ms plus the jittered backoff, within [500ms, 500ms + backoff).
func TestPushbackWaits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jitter retry.Jitter
		lo, hi time.Duration
	}{
		{"no jitter", noJitter{}, 500 * time.Millisecond, 500 * time.Millisecond},
		{"full jitter", retry.FullJitter, 500 * time.Millisecond, 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(reply{code: codes.Unavailable, pushback: []string{"500"}}, reply{})
				p := retry.Policy{BaseBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Jitter: tc.jitter}
				c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

				start := time.Now()
				tr, err := unary(t.Context(), c, "x")
				require.NoError(t, err)
				require.Equal(t, 2, tr.Attempts())
				wait := tr.Waits()[0]
				assert.GreaterOrEqual(t, wait, tc.lo)
				assert.LessOrEqual(t, wait, tc.hi)
				assert.GreaterOrEqual(t, time.Since(start), tc.lo, "slept on the bubble's clock")
			})
		})
	}
}

// A pushback that is negative, malformed or repeated asks for no retry: the
// call fails at once with the status unchanged (A6).
func TestPushbackStops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pushback []string
	}{
		{"negative", []string{"-1"}},
		{"not a number", []string{"soon"}},
		{"empty", []string{""}},
		{"fraction", []string{"1.5"}},
		{"above int32", []string{"2147483648"}},
		{"two values", []string{"10", "20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(reply{code: codes.Unavailable, pushback: tc.pushback}, reply{})
				c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))

				tr, err := unary(t.Context(), c, "x")
				assert.Equal(t, codes.Unavailable, status.Code(err))
				assert.NotErrorIs(t, err, retry.ErrGaveUp)
				assert.Equal(t, 1, tr.Attempts())
				assert.Equal(t, []string{"Unavailable; server pushback says stop"}, reasons(tr))
			})
		})
	}
}

// A pushback of 0 asks for no wait beyond the backoff; a pushback on a code
// that is not retried does not make it retried.
func TestPushbackZeroAndNotRetryable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{code: codes.Unavailable, pushback: []string{"0"}}, reply{})
		p := fast()
		p.Jitter = noJitter{}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
		tr, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{0}, tr.Waits())

		srv = newServer(reply{code: codes.NotFound, pushback: []string{"10"}}, reply{})
		c = dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
		tr, _ = unary(t.Context(), c, "x")
		assert.Equal(t, 1, tr.Attempts())
	})
}

// A google.rpc.RetryInfo in the status details is a floor too, and the
// larger of it and a pushback wins.
func TestRetryInfoFloor(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    reply
		want time.Duration
	}{
		{"RetryInfo", reply{code: codes.Unavailable, retryInfo: 2 * time.Second}, 2 * time.Second},
		{"RetryInfo above pushback", reply{code: codes.Unavailable, retryInfo: 2 * time.Second, pushback: []string{"700"}}, 2 * time.Second},
		{"pushback above RetryInfo", reply{code: codes.Unavailable, retryInfo: time.Second, pushback: []string{"3000"}}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.r, reply{})
				p := fast()
				p.Jitter = noJitter{}
				c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
				tr, err := unary(t.Context(), c, "x")
				require.NoError(t, err)
				assert.Equal(t, []time.Duration{tc.want}, tr.Waits())
			})
		})
	}
}

// A server wait is capped: one of WithMaxRetryAfter (a minute by default)
// or more is not waited for, and one that would pass MaxElapsed or the ctx
// deadline ends the call at once with ErrDeadline.
func TestServerWaitBounded(t *testing.T) {
	twoMinutes := reply{code: codes.Unavailable, pushback: []string{"120000"}}
	for _, tc := range []struct {
		name       string
		r          reply
		opts       []retrygrpc.Option
		maxElapsed time.Duration
		deadline   time.Duration
		attempts   int
		stop       retry.StopReason
	}{
		{"past the default cap", twoMinutes, nil, 0, 0, 1, retry.StopNotRetryable},
		{"RetryInfo past the default cap", reply{code: codes.Unavailable, retryInfo: time.Hour}, nil, 0, 0, 1, retry.StopNotRetryable},
		{"under a raised cap", twoMinutes, []retrygrpc.Option{retrygrpc.WithMaxRetryAfter(5 * time.Minute)}, 0, 0, 2, retry.StopSuccess},
		{"past a lowered cap", reply{code: codes.Unavailable, pushback: []string{"1000"}}, []retrygrpc.Option{retrygrpc.WithMaxRetryAfter(time.Second)}, 0, 0, 1, retry.StopNotRetryable},
		{"past MaxElapsed", reply{code: codes.Unavailable, pushback: []string{"5000"}}, nil, 3 * time.Second, 0, 1, retry.StopDeadline},
		{"past the ctx deadline", reply{code: codes.Unavailable, pushback: []string{"5000"}}, nil, 0, 3 * time.Second, 1, retry.StopDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.r, reply{})
				p := fast()
				p.MaxElapsed = tc.maxElapsed
				c := dial(t, srv, withRetry(p, append(tc.opts, retrygrpc.WithAllIdempotent())...))
				ctx := t.Context()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				tr, err := unary(ctx, c, "x")
				assert.Equal(t, tc.attempts, tr.Attempts())
				assert.Equal(t, tc.stop, tr.Stop())
				if tc.stop != retry.StopSuccess {
					assert.Equal(t, codes.Unavailable, status.Code(err))
					assert.Zero(t, time.Since(start), "returned at once, without waiting")
				}
				if tc.stop == retry.StopDeadline {
					assert.ErrorIs(t, err, retry.ErrDeadline)
					assert.Equal(t, tc.deadline > 0, errors.Is(err, context.DeadlineExceeded), "matches the ctx deadline")
				}
			})
		})
	}
}

// A server stream's pushback and RetryInfo set the least wait as for a
// unary call, and a pushback that says stop stops it.
func TestServerStreamPushback(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        reply
		waits    []time.Duration
		attempts int
	}{
		{"pushback", reply{code: codes.Unavailable, pushback: []string{"500"}}, []time.Duration{500 * time.Millisecond}, 2},
		{"RetryInfo", reply{code: codes.Unavailable, retryInfo: time.Second}, []time.Duration{time.Second}, 2},
		{"stop", reply{code: codes.Unavailable, pushback: []string{"-1"}}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.r, reply{messages: 1})
				p := fast()
				p.Jitter = noJitter{}
				c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))
				var tr retry.Trace
				st := watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req")
				_, _ = drain(st)
				assert.Equal(t, tc.attempts, tr.Attempts())
				assert.Equal(t, tc.waits, tr.Waits())
				if tc.attempts == 1 {
					assert.Equal(t, []string{"-1"}, st.Trailer().Get("grpc-retry-pushback-ms"), "Trailer is the last attempt's")
				}
			})
		})
	}
}
