package retrygrpc_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// watch opens a StreamingOutputCall with body and returns the stream.
func watch(ctx context.Context, t *testing.T, c testgrpc.TestServiceClient, body string, opts ...grpc.CallOption) grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse] {
	t.Helper()
	st, err := c.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte(body)}}, opts...)
	require.NoError(t, err)
	return st
}

// drain reads st to its end and returns the bodies it got and the error
// that ended it, nil for io.EOF.
func drain(st grpc.ServerStreamingClient[testgrpc.StreamingOutputCallResponse]) (string, error) {
	var got string
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got += string(m.GetPayload().GetBody())
	}
}

// A server stream that fails before it commits is retried, with the same
// request and the A6 attempt count, until an attempt delivers.
func TestServerStreamRetriesUntilCommitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), reply{messages: 3})
		c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithIdempotent(outMethod)))

		var tr retry.Trace
		got, err := drain(watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req"))
		require.NoError(t, err)
		assert.Equal(t, "abc", got)
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, retry.StopSuccess, tr.Stop())
		assert.Equal(t, []string{"", "1", "2"}, srv.previous())
		for i, s := range srv.seen() {
			assert.Equal(t, "req", s.payload, "request of attempt %d", i+1)
		}
	})
}

// Once a message or a response header has come, the stream has committed:
// the retry loop, and so the Trace, ends there with success, and a later
// error is returned as it is, with no retry.
func TestServerStreamCommitted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      reply
		got    string
		reason string
	}{
		{"by a message", reply{code: codes.Unavailable, messages: 2}, "ab", ""},
		{"by a header", reply{code: codes.Unavailable, header: true}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.r, reply{messages: 3})
				c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()))

				var tr retry.Trace
				got, err := drain(watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req"))
				assert.Equal(t, tc.got, got)
				assert.Equal(t, codes.Unavailable, status.Code(err))
				assert.Equal(t, status.Error(codes.Unavailable, "scripted Unavailable").Error(), err.Error(), "returned as it is")
				assert.NotErrorIs(t, err, retry.ErrGaveUp)
				assert.Len(t, srv.seen(), 1)
				assert.Equal(t, 1, tr.Attempts())
				assert.Equal(t, tc.reason, tr.Last().Reason)
			})
		})
	}
}

// Header can run the retry loop too: it returns the committing attempt's
// header, and the messages follow from that attempt.
func TestServerStreamHeaderFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), reply{header: true, messages: 2})
		c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()))

		st := watch(t.Context(), t, c, "req")
		md, err := st.Header()
		require.NoError(t, err)
		assert.Equal(t, []string{"header"}, md.Get("attempt"))
		got, err := drain(st)
		require.NoError(t, err)
		assert.Equal(t, "ab", got)
		assert.Len(t, srv.seen(), 2)
	})
}

// Header on a stream whose every attempt fails returns nil, like grpc's;
// RecvMsg then returns the error.
func TestServerStreamHeaderThenFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		p := fast()
		p.MaxAttempts = 2
		c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

		st := watch(t.Context(), t, c, "req")
		md, err := st.Header()
		assert.NoError(t, err)
		assert.Nil(t, md)
		_, err = st.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		_, err = st.Recv()
		assert.ErrorIs(t, err, retry.ErrExhausted, "the same error again")
		assert.Len(t, srv.seen(), 2)
	})
}

// A stream that ends with OK and no message ends the loop: io.EOF, one
// attempt.
func TestServerStreamEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{})
		c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()))
		for _, header := range []bool{false, true} {
			var tr retry.Trace
			st := watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req")
			if header {
				md, err := st.Header()
				require.NoError(t, err)
				assert.Nil(t, md)
			}
			_, err := st.Recv()
			assert.Equal(t, io.EOF, err)
			assert.Equal(t, retry.StopSuccess, tr.Stop())
		}
		assert.Len(t, srv.seen(), 2)
	})
}

// A status that is not retried, or an unmarked method, gets one attempt
// and the status unchanged; running out of attempts says so.
func TestServerStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     codes.Code
		opts     []retrygrpc.Option
		attempts int
		gaveUp   bool
	}{
		{"not retryable", codes.NotFound, []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, 1, false},
		{"unmarked", codes.Unavailable, nil, 1, false},
		{"exhausted", codes.Unavailable, []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(tc.code))
				c := dial(t, srv, withStreamRetry(fast(), tc.opts...))
				_, err := drain(watch(t.Context(), t, c, "req"))
				assert.Equal(t, tc.code, status.Code(err))
				assert.Equal(t, "scripted "+tc.code.String(), status.Convert(err).Message())
				assert.Equal(t, tc.gaveUp, errorIs(err, retry.ErrGaveUp))
				assert.Len(t, srv.seen(), tc.attempts)
			})
		})
	}
}

// AttemptTimeout bounds an attempt only until it commits: a timed-out
// attempt is retried, and the committed stream then runs past the timeout
// without being cut short.
func TestServerStreamAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{block: true}, reply{messages: 3, pause: 5 * time.Second})
		p := fast()
		p.AttemptTimeout = time.Second
		p.MaxElapsed = 3 * time.Second
		c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

		var tr retry.Trace
		start := time.Now()
		got, err := drain(watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req"))
		require.NoError(t, err)
		assert.Equal(t, "abc", got)
		assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
		assert.GreaterOrEqual(t, time.Since(start), 11*time.Second, "ran past AttemptTimeout and MaxElapsed")
	})
}

// An attempt that times out before it commits, every time, ends with
// DEADLINE_EXCEEDED and ErrExhausted.
func TestServerStreamTimeoutsGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{block: true})
		p := fast()
		p.AttemptTimeout = time.Second
		p.MaxAttempts = 2
		c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))
		_, err := drain(watch(t.Context(), t, c, "req"))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Len(t, srv.seen(), 2)
	})
}

// failOpens is a stream interceptor, placed after the retrying one, whose
// first n opens fail with UNAVAILABLE, as when no connection can be had.
func failOpens(n int32) grpc.DialOption {
	var opened atomic.Int32
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if opened.Add(1) <= n {
			return nil, status.Error(codes.Unavailable, "no connection")
		}
		return streamer(ctx, desc, cc, method, opts...)
	})
}

// A stream that cannot open is retried like one that fails: its error
// comes from the first Recv, after the retries.
func TestServerStreamOpenFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{messages: 1})
		c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()), failOpens(2))
		var tr retry.Trace
		got, err := drain(watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req"))
		require.NoError(t, err)
		assert.Equal(t, "a", got)
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, []string{"2"}, srv.previous(), "only the third reached the server")

		c = dial(t, newServer(), withStreamRetry(fast()), failOpens(1))
		_, err = drain(watch(t.Context(), t, c, "req"))
		assert.Equal(t, codes.Unavailable, status.Code(err), "an unmarked method's open is not retried")
	})
}

// An invalid Policy fails NewStream, and no stream is opened.
func TestStreamInvalidPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer()
		c := dial(t, srv, withStreamRetry(retry.Policy{BaseBackoff: -1}, retrygrpc.WithAllIdempotent()))
		_, err := c.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
		assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
		_, err = c.FullDuplexCall(t.Context())
		assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
		assert.Empty(t, srv.seen())
	})
}
