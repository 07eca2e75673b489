package retrygrpc_test

import (
	"io"
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

func payload(body string) *testgrpc.Payload { return &testgrpc.Payload{Body: []byte(body)} }

// A client-streaming stream is retried while it opens, and works as usual
// once open.
func TestClientStreamRetriesOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{})
		c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()), failOpens(2))

		var tr retry.Trace
		st, err := c.StreamingInputCall(retrygrpc.WithTrace(t.Context(), &tr))
		require.NoError(t, err)
		assert.Equal(t, 3, tr.Attempts(), "the Trace is stored once the stream is open")
		for _, b := range []string{"a", "b", "c"} {
			require.NoError(t, st.Send(&testgrpc.StreamingInputCallRequest{Payload: payload(b)}))
		}
		resp, err := st.CloseAndRecv()
		require.NoError(t, err)
		assert.EqualValues(t, 3, resp.GetAggregatedPayloadSize())
		assert.Len(t, srv.seen(), 1)
		assert.Equal(t, "abc", srv.seen()[0].payload)
	})
}

// Once open, a client-streaming or bidi stream is not retried: an error the
// interceptor would have retried matches ErrNotReplayed and says so, with
// its status unchanged; any other comes back as it is.
func TestStreamNotReplayed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		code        codes.Code
		opts        []retrygrpc.Option
		notReplayed bool
	}{
		{"retryable", codes.Unavailable, []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, true},
		{"not retryable", codes.NotFound, []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, false},
		{"unmarked method", codes.Unavailable, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(t *testing.T, err error, srv *server) {
				t.Helper()
				assert.Equal(t, tc.code, status.Code(err))
				assert.Equal(t, "scripted "+tc.code.String(), status.Convert(err).Message())
				assert.Equal(t, tc.notReplayed, errorIs(err, retrygrpc.ErrNotReplayed))
				if tc.notReplayed {
					assert.Contains(t, err.Error(), "is retried only while it opens")
				}
				assert.Len(t, srv.seen(), 1)
			}
			t.Run("client-streaming", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := newServer(fail(tc.code))
					c := dial(t, srv, withStreamRetry(fast(), tc.opts...))
					st, err := c.StreamingInputCall(t.Context())
					require.NoError(t, err)
					require.NoError(t, st.Send(&testgrpc.StreamingInputCallRequest{Payload: payload("a")}))
					_, err = st.CloseAndRecv()
					check(t, err, srv)
				})
			})
			t.Run("bidi", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := newServer(fail(tc.code))
					c := dial(t, srv, withStreamRetry(fast(), tc.opts...))
					st, err := c.FullDuplexCall(t.Context())
					require.NoError(t, err)
					if err := st.Send(&testgrpc.StreamingOutputCallRequest{Payload: payload("a")}); err != nil {
						require.Equal(t, io.EOF, err, "the stream may have ended already")
					}
					_, err = st.Recv()
					check(t, err, srv)
				})
			})
		})
	}
}

// AttemptTimeout bounds the opening of a bidi stream, never the open
// stream: an echo that outlasts it goes on.
func TestBidiOutlivesAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{})
		p := fast()
		p.AttemptTimeout = time.Second
		p.MaxElapsed = time.Second
		c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

		st, err := c.FullDuplexCall(t.Context())
		require.NoError(t, err)
		for _, b := range []string{"a", "b", "c"} {
			time.Sleep(5 * time.Second)
			require.NoError(t, st.Send(&testgrpc.StreamingOutputCallRequest{Payload: payload(b)}))
			m, err := st.Recv()
			require.NoError(t, err)
			assert.Equal(t, b, string(m.GetPayload().GetBody()))
		}
		require.NoError(t, st.CloseSend())
		_, err = st.Recv()
		assert.Equal(t, io.EOF, err)
	})
}

// A stream that cannot open within its retries fails at NewStream, as
// without the interceptor.
func TestClientStreamOpenGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fast()
		p.MaxAttempts = 2
		c := dial(t, newServer(), withStreamRetry(p, retrygrpc.WithAllIdempotent()), failOpens(5))
		_, err := c.FullDuplexCall(t.Context())
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, retry.ErrExhausted)
	})
}
