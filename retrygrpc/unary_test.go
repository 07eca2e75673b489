package retrygrpc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Two UNAVAILABLE then OK: three attempts, each with the same request, and
// the server sees grpc-previous-rpc-attempts absent, "1", "2" (gRFC A6).
func TestUnaryRetriesUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), reply{})
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithIdempotent(unaryMethod)))

		tr, err := unary(t.Context(), c, "hello")
		require.NoError(t, err)
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, retry.StopSuccess, tr.Stop())
		assert.Equal(t, []string{"Unavailable", "Unavailable", ""}, reasons(tr))
		assert.Equal(t, []string{"", "1", "2"}, srv.previous(), "grpc-previous-rpc-attempts")
		for i, s := range srv.seen() {
			assert.Equal(t, "hello", s.payload, "payload of attempt %d", i+1)
		}
	})
}

// A status the interceptor does not retry ends the call after one attempt,
// and the caller gets the status as the server sent it.
func TestUnaryNotRetryableCodes(t *testing.T) {
	for _, code := range []codes.Code{
		codes.InvalidArgument, codes.NotFound, codes.PermissionDenied, codes.Unauthenticated,
		codes.Internal, codes.Unknown, codes.ResourceExhausted, codes.Aborted,
		codes.FailedPrecondition, codes.AlreadyExists, codes.Unimplemented,
		codes.DeadlineExceeded, // sent by the server, not a timeout of the attempt
	} {
		t.Run(code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(code), reply{})
				c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))

				tr, err := unary(t.Context(), c, "x")
				require.Error(t, err)
				assert.Equal(t, code, status.Code(err))
				assert.Equal(t, "scripted "+code.String(), status.Convert(err).Message(), "message unchanged")
				assert.Equal(t, status.Convert(err).Err().Error(), err.Error(), "text unchanged")
				assert.NotErrorIs(t, err, retry.ErrGaveUp)
				assert.Equal(t, 1, tr.Attempts())
				assert.Equal(t, retry.StopNotRetryable, tr.Stop())
				assert.Len(t, srv.seen(), 1)
			})
		})
	}
}

// When attempts run out, the status is the last attempt's and errors.Is
// finds why retrying stopped and the attempt's error.
func TestUnaryGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{code: codes.Unavailable, retryInfo: 1})
		p := fast()
		p.MaxAttempts = 3
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		tr, err := unary(t.Context(), c, "x")
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, "scripted Unavailable", status.Convert(err).Message())
		assert.Len(t, status.Convert(err).Details(), 1, "details kept")
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.ErrorIs(t, err, retry.ErrExhausted)
		var se *retry.StopError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 3, se.Attempts)
		assert.Equal(t, codes.Unavailable, status.Code(se.Err), "the last attempt's error")
		assert.Contains(t, err.Error(), "gave up after 3 attempts")
		assert.Equal(t, retry.StopExhausted, tr.Stop())
		assert.Len(t, srv.seen(), 3)
	})
}

// Only methods marked idempotent, by an Option or per call, are retried:
// any other gets exactly one attempt.
func TestUnaryIdempotentMethodsOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []retrygrpc.Option
		callOpts []grpc.CallOption
		attempts int
	}{
		{"unmarked", nil, nil, 1},
		{"another method marked", []retrygrpc.Option{retrygrpc.WithIdempotent(emptyMethod)}, nil, 1},
		{"marked", []retrygrpc.Option{retrygrpc.WithIdempotent(emptyMethod, unaryMethod)}, nil, 3},
		{"marked twice", []retrygrpc.Option{retrygrpc.WithIdempotent(emptyMethod), retrygrpc.WithIdempotent(unaryMethod)}, nil, 3},
		{"all marked", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, nil, 3},
		{"marked per call", nil, []grpc.CallOption{retrygrpc.CallIdempotent()}, 3},
		{"zero Option", []retrygrpc.Option{{}}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), reply{})
				c := dial(t, srv, withRetry(fast(), tc.opts...))

				tr, err := unary(t.Context(), c, "x", tc.callOpts...)
				assert.Equal(t, tc.attempts, tr.Attempts())
				assert.Len(t, srv.seen(), tc.attempts)
				if tc.attempts == 1 {
					assert.Equal(t, codes.Unavailable, status.Code(err))
					assert.Equal(t, []string{"Unavailable; method not marked idempotent"}, reasons(tr))
					assert.NotErrorIs(t, err, retry.ErrGaveUp)
				} else {
					assert.NoError(t, err)
				}
			})
		})
	}
}

// WithCodes replaces the codes that are retried.
func TestUnaryWithCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		codes    []codes.Code
		first    codes.Code
		attempts int
	}{
		{"RESOURCE_EXHAUSTED added", []codes.Code{codes.ResourceExhausted}, codes.ResourceExhausted, 2},
		{"UNAVAILABLE dropped", []codes.Code{codes.ResourceExhausted}, codes.Unavailable, 1},
		{"none", nil, codes.Unavailable, 1},
		{"server DEADLINE_EXCEEDED", []codes.Code{codes.DeadlineExceeded}, codes.DeadlineExceeded, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(tc.first), reply{})
				c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent(), retrygrpc.WithCodes(tc.codes...)))
				tr, _ := unary(t.Context(), c, "x")
				assert.Equal(t, tc.attempts, tr.Attempts())
			})
		})
	}
}

// CallPolicy replaces the interceptor's Policy for one call.
func TestUnaryCallPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))

		p := fast()
		p.MaxAttempts = 2
		tr, err := unary(t.Context(), c, "x", retrygrpc.CallPolicy(p))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, 2, tr.Attempts())

		tr, _ = unary(t.Context(), c, "x")
		assert.Equal(t, 4, tr.Attempts(), "the interceptor's Policy for other calls")
	})
}

// A Policy's own Classifier decides in place of the codes, but cannot make
// an unmarked method retried.
func TestUnaryPolicyClassifier(t *testing.T) {
	internal := func(_ context.Context, a retry.Attempt) retry.Decision {
		return retry.Decision{Retry: status.Code(a.Err) == codes.Internal, Reason: "mine"}
	}
	for _, tc := range []struct {
		name     string
		opts     []retrygrpc.Option
		first    codes.Code
		attempts int
	}{
		{"retries what it says", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, codes.Internal, 2},
		{"not what it does not", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, codes.Unavailable, 1},
		{"codes ignored", []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithCodes(codes.Unavailable)}, codes.Unavailable, 1},
		{"unmarked method", nil, codes.Internal, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(tc.first), reply{})
				p := fast()
				p.Classifier = internal
				c := dial(t, srv, withRetry(p, tc.opts...))
				tr, _ := unary(t.Context(), c, "x")
				assert.Equal(t, tc.attempts, tr.Attempts())
			})
		})
	}
}

// An invalid Policy makes no attempt and says why.
func TestUnaryInvalidPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer()
		c := dial(t, srv, withRetry(retry.Policy{Factor: 0.5}, retrygrpc.WithAllIdempotent()))
		_, err := unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
		assert.Empty(t, srv.seen())
	})
}

// errors.Is still finds the server's status error itself.
func TestUnaryErrorMatchesAttemptError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.NotFound))
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))
		_, err := unary(t.Context(), c, "x")
		assert.True(t, errors.Is(err, status.Error(codes.NotFound, "scripted NotFound")))
	})
}
