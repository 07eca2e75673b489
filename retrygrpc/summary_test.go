package retrygrpc_test

import (
	"context"
	"fmt"
	"sync"
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

// summaries records what the hooks of WithOnDone were called with.
type summaries struct {
	mu  sync.Mutex
	got []retrygrpc.Summary
}

func (s *summaries) hook(_ context.Context, sum retrygrpc.Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, sum)
}

// WithOnDone's hook gets each call once, unary and streaming, with its full
// method, its status code (the one the caller gets) and its Trace;
// Policy.OnDone still runs, first, and several WithOnDone add up.
func TestWithOnDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sums summaries
		var order []string
		p := fast()
		p.OnDone = func(context.Context, retry.Trace, error) { order = append(order, "policy") }
		hook := func(ctx context.Context, s retrygrpc.Summary) { order = append(order, "hook"); sums.hook(ctx, s) }
		second := func(context.Context, retrygrpc.Summary) { order = append(order, "second") }
		opts := []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithOnDone(hook), retrygrpc.WithOnDone(second), retrygrpc.WithOnDone(nil)}
		srv := newServer(fail(codes.Unavailable), reply{}, fail(codes.NotFound), fail(codes.Unavailable), reply{messages: 2})
		c := dial(t, srv, withRetry(p, opts...), withStreamRetry(p, opts...))

		_, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		_, err = unary(t.Context(), c, "x")
		require.Equal(t, codes.NotFound, status.Code(err))
		_, err = drain(watch(t.Context(), t, c, "x"))
		require.NoError(t, err)

		require.Len(t, sums.got, 3)
		assert.Equal(t, unaryMethod, sums.got[0].Method)
		assert.Equal(t, unaryMethod, sums.got[1].Method)
		assert.Equal(t, outMethod, sums.got[2].Method)
		assert.Equal(t, []codes.Code{codes.OK, codes.NotFound, codes.OK}, []codes.Code{sums.got[0].Code, sums.got[1].Code, sums.got[2].Code})
		assert.NoError(t, sums.got[0].Err)
		assert.Equal(t, 2, sums.got[0].Trace.Attempts())
		assert.Equal(t, retry.StopNotRetryable, sums.got[1].Trace.Stop())
		assert.Equal(t, codes.NotFound, status.Code(sums.got[1].Err), "Err is what the caller got")
		assert.Equal(t, 2, sums.got[2].Trace.Attempts())
		assert.Equal(t, []string{"policy", "hook", "second", "policy", "hook", "second", "policy", "hook", "second"}, order)
	})
}

// A hook of WithOnDone alone, without a Policy.OnDone, has Do time the
// first attempt, so that the Trace spans the whole call; a call whose
// caller's deadline ends it reports DEADLINE_EXCEEDED, as the caller sees
// it; a client-streaming stream is reported when it opens.
func TestWithOnDoneCodesAndTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sums summaries
		opts := []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithOnDone(sums.hook)}
		srv := newServer(fail(codes.Unavailable), reply{}, reply{block: true}, reply{})
		c := dial(t, srv, withRetry(fast(), opts...), withStreamRetry(fast(), opts...))

		_, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err = unary(ctx, c, "x")
		require.Equal(t, codes.DeadlineExceeded, status.Code(err))
		st, err := c.StreamingInputCall(t.Context())
		require.NoError(t, err)
		require.Len(t, sums.got, 3, "a client stream is reported when it opens")
		_, _ = st.CloseAndRecv()

		first := sums.got[0].Trace
		for a := range first.All() {
			assert.False(t, a.Start.IsZero(), "attempt %d has no Start: Do did not time it", a.Number)
		}
		assert.Equal(t, codes.DeadlineExceeded, sums.got[1].Code)
		assert.Equal(t, retry.StopContextDone, sums.got[1].Trace.Stop())
		assert.Equal(t, inMethod, sums.got[2].Method)
		assert.Equal(t, codes.OK, sums.got[2].Code)
	})
}

// A call whose Policy hook panics is reported, with code UNKNOWN, before
// the panic reaches the caller.
func TestWithOnDoneAfterPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sums summaries
		p := fast()
		p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { panic("hook") }
		srv := newServer(fail(codes.Unavailable), reply{})
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent(), retrygrpc.WithOnDone(sums.hook)))
		assert.PanicsWithValue(t, "hook", func() { _, _ = unary(t.Context(), c, "x") })
		require.Len(t, sums.got, 1)
		assert.Equal(t, codes.Unknown, sums.got[0].Code)
		assert.Equal(t, retry.StopPanicked, sums.got[0].Trace.Stop())
		assert.Equal(t, 1, sums.got[0].Trace.Attempts())
	})
}

// WithOnDone reports each call once, with its method and status code: the
// hook for metrics and debug pages (retryotel.Observer.RecordGRPC and
// retrydebug.Recorder.RecordGRPC take its parts).
func ExampleWithOnDone() {
	srv := newServer(fail(codes.Unavailable), reply{}, fail(codes.NotFound))
	report := func(_ context.Context, s retrygrpc.Summary) {
		fmt.Println(s.Method, s.Code, s.Trace.Attempts(), "attempts")
	}
	cc, stop := exampleConn(srv, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{BaseBackoff: time.Millisecond}, // short waits, for the example
		retrygrpc.WithIdempotent("/grpc.testing.TestService/UnaryCall"),
		retrygrpc.WithOnDone(report),
	)))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	_, _ = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	_, _ = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	// Output:
	// /grpc.testing.TestService/UnaryCall OK 2 attempts
	// /grpc.testing.TestService/UnaryCall NotFound 1 attempts
}
