package retrygrpc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// done records what Policy.OnDone was called with.
type done struct {
	mu    sync.Mutex
	calls []retry.Trace
	errs  []error
}

func (d *done) hook(_ context.Context, tr retry.Trace, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, tr)
	d.errs = append(d.errs, err)
}

// Policy.OnDone is called once per call, with its Trace and its error, for
// unary calls and for streams when their retry loop ends; OnRetry before
// each wait.
func TestOnDoneAndOnRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d done
		var waits []time.Duration
		p := fast()
		p.OnDone = d.hook
		p.OnRetry = func(_ context.Context, _ retry.Attempt, wait time.Duration) { waits = append(waits, wait) }
		srv := newServer(fail(codes.Unavailable), reply{}, fail(codes.NotFound), fail(codes.Unavailable), reply{messages: 1})
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()), withStreamRetry(p, retrygrpc.WithAllIdempotent()))

		_, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		_, err = unary(t.Context(), c, "x")
		require.Error(t, err)
		st := watch(t.Context(), t, c, "x")
		assert.Len(t, d.calls, 2, "a stream's loop has not run yet")
		_, err = drain(st)
		require.NoError(t, err)

		require.Len(t, d.calls, 3)
		assert.Equal(t, 2, d.calls[0].Attempts())
		assert.NoError(t, d.errs[0])
		assert.Equal(t, retry.StopNotRetryable, d.calls[1].Stop())
		assert.Equal(t, codes.NotFound, status.Code(d.errs[1]), "OnDone sees retry's error, which has the status")
		assert.Equal(t, 2, d.calls[2].Attempts())
		assert.Len(t, waits, 2)
	})
}

// Each call's Trace goes to the dst of its own ctx, and a call without
// WithTrace leaves others' alone.
func TestTracePerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), reply{}, reply{}, fail(codes.Unavailable), reply{})
		p := fast()
		p.Jitter = retry.NoJitter
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		first, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		second, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		_, err = c.UnaryCall(t.Context(), nil)
		require.NoError(t, err)

		assert.Equal(t, 2, first.Attempts())
		assert.Equal(t, "2 attempts, waits [1ms], 1ms, ok", first.String())
		assert.Equal(t, 1, second.Attempts())
	})
}

// The Policy's Classifier, OnRetry and OnDone and the hooks of WithOnDone
// get the ctx the caller made the call with, itself, as they would from
// retry.Do without the interceptor, both when the call is retried and when
// it is not.
func TestUnaryHooksGetTheCallersCtx(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []retrygrpc.Option
		retried bool
	}{
		{"retried", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, true},
		{"not idempotent", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got []string
				ctx := context.WithValue(t.Context(), ctxKey{}, "caller")
				check := func(hook string, c context.Context) {
					if c != ctx {
						got = append(got, hook+": not the caller's ctx")
						return
					}
					got = append(got, hook)
				}
				p := fast()
				p.Classifier = func(c context.Context, a retry.Attempt) retry.Decision {
					check("Classifier", c)
					return retry.Decision{Retry: status.Code(a.Err) == codes.Unavailable}
				}
				p.OnRetry = func(c context.Context, _ retry.Attempt, _ time.Duration) { check("OnRetry", c) }
				p.OnDone = func(c context.Context, _ retry.Trace, _ error) { check("OnDone", c) }
				onDone := retrygrpc.WithOnDone(func(c context.Context, _ retrygrpc.Summary) { check("WithOnDone", c) })
				srv := newServer(fail(codes.Unavailable), reply{})
				c := dial(t, srv, withRetry(p, append(tc.opts, onDone)...))

				_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
				if tc.retried {
					require.NoError(t, err)
					assert.Equal(t, []string{"Classifier", "OnRetry", "OnDone", "WithOnDone"}, got)
				} else {
					require.Error(t, err)
					assert.Equal(t, []string{"Classifier", "OnDone", "WithOnDone"}, got)
				}
			})
		})
	}
}

type ctxKey struct{}
