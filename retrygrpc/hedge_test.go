package retrygrpc_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
)

// copyReply is what the hedge server does with one copy of a call: wait
// after, then end with code (and the pushback trailer, if set), unless the
// copy is cancelled first.
type copyReply struct {
	after    time.Duration
	code     codes.Code
	pushback string
	header   bool // send a response header before the status
}

// copySeen is what the hedge server saw of one copy.
type copySeen struct {
	previous  string        // grpc-previous-rpc-attempts, "" on the first
	at        time.Duration // when it arrived, from the server's start (fake time in a bubble)
	cancelled bool          // its ctx ended before its reply
}

// hedgeServer answers the n-th copy of a call (by grpc-previous-rpc-attempts)
// with script[n], the last entry for later ones.
type hedgeServer struct {
	testgrpc.UnimplementedTestServiceServer
	start     time.Time
	script    []copyReply
	byArrival bool // index script by arrival, over every call, rather than by copy

	mu   sync.Mutex
	seen []copySeen
}

func newHedgeServer(script ...copyReply) *hedgeServer {
	return &hedgeServer{start: time.Now(), script: script}
}

func (s *hedgeServer) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	prev := ""
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) > 0 {
		prev = v[0]
	}
	n, _ := strconv.Atoi(prev)
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, copySeen{previous: prev, at: time.Since(s.start)})
	r := copyReply{}
	if len(s.script) > 0 {
		k := n
		if s.byArrival {
			k = i
		}
		r = s.script[min(k, len(s.script)-1)]
	}
	s.mu.Unlock()
	select {
	case <-time.After(r.after):
	case <-ctx.Done():
		s.mu.Lock()
		s.seen[i].cancelled = true
		s.mu.Unlock()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if r.header {
		_ = grpc.SendHeader(ctx, metadata.Pairs("copy", strconv.Itoa(n+1)))
	}
	if r.pushback != "" {
		_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", r.pushback))
	}
	if r.code != codes.OK {
		return nil, status.Error(r.code, "scripted "+r.code.String())
	}
	// Only on OK: a response header before a failure commits the call (A6).
	_ = grpc.SetHeader(ctx, metadata.Pairs("copy", strconv.Itoa(n+1)))
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: []byte("copy " + strconv.Itoa(n+1))}}, nil
}

// copies returns what the server saw of each copy, in the order of their
// grpc-previous-rpc-attempts: copies sent at once may arrive in any order.
func (s *hedgeServer) copies() []copySeen {
	s.mu.Lock()
	out := append([]copySeen(nil), s.seen...)
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b copySeen) int {
		x, _ := strconv.Atoi(a.previous)
		y, _ := strconv.Atoi(b.previous)
		return cmp.Compare(x, y)
	})
	return out
}

// arrivals returns when each copy arrived.
func (s *hedgeServer) arrivals() []time.Duration {
	var out []time.Duration
	for _, c := range s.copies() {
		out = append(out, c.at)
	}
	return out
}

// hedgingConfig is a service config that hedges UnaryCall, with
// retryThrottling if throttling is not empty.
func hedgingConfig(t *testing.T, maxAttempts int, delay string, nonFatal []string, throttling string) *retryconfig.Config {
	t.Helper()
	codesJSON := "["
	for i, c := range nonFatal {
		if i > 0 {
			codesJSON += ","
		}
		codesJSON += strconv.Quote(c)
	}
	codesJSON += "]"
	sc := fmt.Sprintf(`{"methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
		"hedgingPolicy": {"maxAttempts": %d, "hedgingDelay": %q, "nonFatalStatusCodes": %s}}]`, maxAttempts, delay, codesJSON)
	if throttling != "" {
		sc += `, "retryThrottling": ` + throttling
	}
	sc += "}"
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err, sc)
	return cfg
}

// dialHedged serves srv on bufconn, through the interceptor with cfg's
// policies, every method idempotent unless opts say otherwise.
func dialHedged(t *testing.T, srv *hedgeServer, cfg *retryconfig.Config, opts ...retrygrpc.Option) testgrpc.TestServiceClient {
	t.Helper()
	if opts == nil {
		opts = []retrygrpc.Option{retrygrpc.WithAllIdempotent()}
	}
	opts = append(opts, retrygrpc.WithPolicies(retryconfig.NewLive(cfg)))
	cc := dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) },
		grpc.WithDisableRetry(), withRetry(retry.Policy{}, opts...))
	return testgrpc.NewTestServiceClient(cc)
}

func callHedged(ctx context.Context, c testgrpc.TestServiceClient, opts ...grpc.CallOption) (*testgrpc.SimpleResponse, error) {
	return c.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("x")}}, opts...)
}

// The copies go one hedgingDelay apart, each with its
// grpc-previous-rpc-attempts; the first OK wins, its reply is the caller's,
// and the copies still running are cancelled.
func TestHedgeSendsCopiesEveryDelayAndCancelsLosers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(
			copyReply{after: time.Second},
			copyReply{after: time.Second},
			copyReply{after: 50 * time.Millisecond},
		)
		c := dialHedged(t, srv, hedgingConfig(t, 4, "0.1s", nil, ""))
		start := time.Now()
		resp, err := callHedged(t.Context(), c)
		require.NoError(t, err)
		assert.Equal(t, "copy 3", string(resp.GetPayload().GetBody()), "the winner's reply")
		assert.Equal(t, 250*time.Millisecond, time.Since(start), "the third copy answers 50ms after it went, at 200ms")
		got := srv.copies()
		require.Len(t, got, 3, "the fourth copy is never sent")
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, srv.arrivals())
		var prev []string
		for _, cp := range got {
			prev = append(prev, cp.previous)
		}
		assert.Equal(t, []string{"", "1", "2"}, prev)
		synctest.Wait()
		got = srv.copies()
		assert.True(t, got[0].cancelled && got[1].cancelled, "the losers are cancelled: %+v", got)
		assert.False(t, got[2].cancelled)
	})
}

// A hedgingDelay of 0 sends every copy at once.
func TestHedgeZeroDelaySendsAllAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Second}, copyReply{after: 10 * time.Millisecond}, copyReply{after: time.Second})
		c := dialHedged(t, srv, hedgingConfig(t, 3, "0s", nil, ""))
		resp, err := callHedged(t.Context(), c)
		require.NoError(t, err)
		assert.Equal(t, "copy 2", string(resp.GetPayload().GetBody()))
		assert.Equal(t, []time.Duration{0, 0, 0}, srv.arrivals())
	})
}

// The header and trailer the caller asks for are those of the copy that
// decided the call, written once the race is over (under -race, the copies
// writing them at once would be caught).
func TestHedgeHeaderIsTheWinners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Second}, copyReply{after: 10 * time.Millisecond})
		c := dialHedged(t, srv, hedgingConfig(t, 2, "0s", nil, ""))
		var header, trailer metadata.MD
		_, err := callHedged(t.Context(), c, grpc.Header(&header), grpc.Trailer(&trailer))
		require.NoError(t, err)
		assert.Equal(t, []string{"2"}, header.Get("copy"))
	})
}

// A method not marked idempotent is not hedged: one copy, as it gets one
// attempt under a retryPolicy.
func TestHedgeNeedsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Second})
		c := dialHedged(t, srv, hedgingConfig(t, 3, "0.1s", nil, ""), retrygrpc.WithIdempotent("/other/Method"))
		_, err := callHedged(t.Context(), c)
		require.NoError(t, err)
		assert.Len(t, srv.copies(), 1)
	})
}

// The caller's deadline bounds the whole chain of copies (A6): when it
// passes, every copy is cancelled and the call fails with
// DEADLINE_EXCEEDED.
func TestHedgeCallerDeadlineEndsEveryCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Hour})
		c := dialHedged(t, srv, hedgingConfig(t, 5, "0.1s", []string{"UNAVAILABLE"}, ""))
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		_, err := callHedged(ctx, c)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		synctest.Wait()
		got := srv.copies()
		assert.Len(t, got, 3, "copies at 0, 100ms and 200ms")
		for i, cp := range got {
			assert.True(t, cp.cancelled, "copy %d cancelled", i+1)
		}
	})
}

// Seam: an outer retry.Do around a hedged call. A fatal status is marked
// permanent, so the outer loop does not retry it; copies that all failed
// with a non-fatal status leave the outer loop free to try the call again.
func TestHedgeUnderOuterRetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		code        codes.Code
		wantCopies  int
		wantOuterNs int
	}{
		{"fatal", codes.InvalidArgument, 1, 1},
		{"non-fatal, every copy failed", codes.Unavailable, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newHedgeServer(copyReply{code: tc.code})
				c := dialHedged(t, srv, hedgingConfig(t, 2, "0.1s", []string{"UNAVAILABLE"}, ""))
				outer := 0
				_, err := retry.Do(t.Context(), func(ctx context.Context) error {
					outer++
					_, err := callHedged(ctx, c)
					return err
				}, retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond})
				assert.Equal(t, tc.code, status.Code(err))
				assert.Equal(t, tc.wantOuterNs, outer, "outer attempts")
				assert.Len(t, srv.copies(), tc.wantCopies)
			})
		})
	}
}

// A hedged call's Trace and WithOnDone's Summary show the race as one
// attempt whose Reason counts the copies.
func TestHedgeTraceAndSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{code: codes.Unavailable})
		var sums []retrygrpc.Summary
		c := dialHedged(t, srv, hedgingConfig(t, 3, "0.1s", []string{"UNAVAILABLE"}, ""),
			retrygrpc.WithAllIdempotent(),
			retrygrpc.WithOnDone(func(_ context.Context, s retrygrpc.Summary) { sums = append(sums, s) }))
		var tr retry.Trace
		_, err := callHedged(retrygrpc.WithTrace(t.Context(), &tr), c)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, "hedged: 3 copies sent; Unavailable", tr.Last().Reason)
		require.Len(t, sums, 1)
		assert.Equal(t, codes.Unavailable, sums[0].Code)
	})
}

// A copy that fails after its response header has committed the call (A6):
// its status decides the call, even a non-fatal one, and no more copies go.
func TestHedgeHeaderCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Second}, copyReply{after: 10 * time.Millisecond, code: codes.Unavailable, header: true})
		c := dialHedged(t, srv, hedgingConfig(t, 3, "0.1s", []string{"UNAVAILABLE"}, ""))
		_, err := callHedged(t.Context(), c)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond}, srv.arrivals())
		synctest.Wait()
		assert.True(t, srv.copies()[0].cancelled)
	})
}

// A methodConfig's timeout (the policy's MaxElapsed) bounds the whole chain
// of copies, as the call's deadline does.
func TestHedgeMaxElapsedBoundsTheChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Hour})
		cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
			"timeout": "0.25s", "hedgingPolicy": {"maxAttempts": 5, "hedgingDelay": "0.1s"}}]}`))
		require.NoError(t, err)
		c := dialHedged(t, srv, cfg)
		start := time.Now()
		_, err = callHedged(t.Context(), c)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		assert.Equal(t, 250*time.Millisecond, time.Since(start))
		assert.Len(t, srv.copies(), 3, "copies at 0, 100ms and 200ms")
	})
}

// A panic below the interceptor, in one copy, reaches the caller's
// goroutine once the other copies are cancelled and reaped.
func TestHedgePanicInACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Hour})
		live := retryconfig.NewLive(hedgingConfig(t, 3, "0.1s", nil, ""))
		boom := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			md, _ := metadata.FromOutgoingContext(ctx)
			if len(md.Get("grpc-previous-rpc-attempts")) > 0 {
				panic("copy 2")
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		cc := dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) }, grpc.WithDisableRetry(),
			grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(live)), boom))
		c := testgrpc.NewTestServiceClient(cc)
		assert.PanicsWithValue(t, "copy 2", func() { _, _ = callHedged(t.Context(), c) })
		synctest.Wait()
		assert.True(t, srv.copies()[0].cancelled, "the first copy is cancelled before the panic goes on")
	})
}

// A pushback's wait bounds nothing but the next copy: the call's deadline
// still ends the call while it waits, and a wait past WithMaxRetryAfter
// sends no more copies at all.
func TestHedgePushbackWaitAndCtx(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pushback string
		want     time.Duration
		code     codes.Code
	}{
		{"the deadline ends a pushback's wait", "30000", time.Second, codes.DeadlineExceeded},
		{"a pushback past WithMaxRetryAfter stops the copies", "120000", 10 * time.Millisecond, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newHedgeServer(copyReply{after: 10 * time.Millisecond, code: codes.Unavailable, pushback: tc.pushback})
				c := dialHedged(t, srv, hedgingConfig(t, 3, "0.1s", []string{"UNAVAILABLE"}, ""), retrygrpc.WithAllIdempotent(), retrygrpc.WithoutHold())
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				start := time.Now()
				_, err := callHedged(ctx, c)
				assert.Equal(t, tc.code, status.Code(err), "%v", err)
				assert.Equal(t, tc.want, time.Since(start))
				assert.Len(t, srv.copies(), 1)
			})
		})
	}
}

// Seam: a hedge under a hold. A copy's pushback holds the whole target
// back, so the first copy of another call waits for the hold to end too,
// and the success after it clears the hold.
func TestHedgeUnderHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: 10 * time.Millisecond, code: codes.Unavailable, pushback: "300"}, copyReply{})
		srv.byArrival = true
		c := dialHedged(t, srv, hedgingConfig(t, 2, "1s", []string{"UNAVAILABLE"}, ""))
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := callHedged(t.Context(), c)
			assert.NoError(t, err)
		})
		time.Sleep(50 * time.Millisecond) // the first call's pushback came at 10ms
		_, err := callHedged(t.Context(), c)
		require.NoError(t, err)
		wg.Wait()
		assert.Equal(t, []time.Duration{0, 310 * time.Millisecond, 310 * time.Millisecond}, srv.arrivals(),
			"the second call's first copy waits out the hold, with the first call's second copy")
	})
}

// A server stream whose copies all fail with a non-fatal status before
// committing sends maxAttempts copies and ends with the last status; a bidi
// stream (and a client-streaming one) is not hedged: the interceptor keeps
// no copy of what the caller streams, so it makes one attempt.
func TestHedgeServerStreamsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
			"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}`))
		require.NoError(t, err)
		c := dial(t, srv, withStreamRetry(retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
		_, err = drain(watch(t.Context(), t, c, "x"))
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Len(t, srv.seen(), 3, "a server stream is hedged")

		bidi, err := c.FullDuplexCall(t.Context())
		require.NoError(t, err)
		_, err = bidi.Recv()
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Len(t, srv.seen(), 4, "a bidi stream makes one attempt")
	})
}

// Seam: a reload during a hedged call. The call took its hedging at its
// start, and keeps it; the next call takes the new config.
func TestHedgeKeepsItsPolicyAcrossAnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{after: time.Second})
		live := retryconfig.NewLive(hedgingConfig(t, 3, "0.1s", nil, ""))
		cc := dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) }, grpc.WithDisableRetry(),
			withRetry(retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(live)))
		c := testgrpc.NewTestServiceClient(cc)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := callHedged(t.Context(), c)
			assert.NoError(t, err)
		})
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, live.Update([]byte(`{"methodConfig": []}`)))
		wg.Wait()
		assert.Len(t, srv.copies(), 3, "the call in flight hedges as its config said")
		_, err := callHedged(t.Context(), c)
		require.NoError(t, err)
		assert.Len(t, srv.copies(), 4, "the next call makes one attempt")
	})
}
