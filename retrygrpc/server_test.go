package retrygrpc_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/shed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gated is a test service whose UnaryCall and FullDuplexCall run do, and
// that counts the calls that reached it and the priorities they carried.
type gated struct {
	testgrpc.UnimplementedTestServiceServer
	do      func(ctx context.Context, body string) error
	reached atomic.Int32

	mu         sync.Mutex
	priorities []string
}

func (g *gated) enter(ctx context.Context) {
	g.reached.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	g.mu.Lock()
	g.priorities = append(g.priorities, md.Get("criticality")...)
	g.mu.Unlock()
}

func (g *gated) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	g.enter(ctx)
	if g.do != nil {
		if err := g.do(ctx, string(req.GetPayload().GetBody())); err != nil {
			return nil, err
		}
	}
	return &testgrpc.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (g *gated) FullDuplexCall(st testgrpc.TestService_FullDuplexCallServer) error {
	g.enter(st.Context())
	for {
		m, err := st.Recv()
		if err != nil {
			return nil // the client closed its side, or went away
		}
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// serveShed serves g behind both server interceptors of l and returns a
// client of it with the dial options opts.
func serveShed(t *testing.T, l *shed.Limiter, g *gated, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	t.Helper()
	cc := dialServe(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, g) },
		[]grpc.ServerOption{
			grpc.ChainUnaryInterceptor(retrygrpc.UnaryServerInterceptor(l)),
			grpc.ChainStreamInterceptor(retrygrpc.StreamServerInterceptor(l)),
		}, nil, opts...)
	return testgrpc.NewTestServiceClient(cc)
}

func newShed(t *testing.T, o shed.Options) *shed.Limiter {
	t.Helper()
	l, err := shed.New(o)
	require.NoError(t, err)
	return l
}

// block is a do that waits for release to close (or for the call's ctx
// to end), after saying that it entered.
func block(entered chan<- struct{}, release <-chan struct{}) func(context.Context, string) error {
	return func(ctx context.Context, _ string) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// pushbackMS reads the pushback trailer of a shed call: whole seconds,
// in milliseconds.
func pushbackMS(t *testing.T, md metadata.MD) time.Duration {
	t.Helper()
	vs := md.Get("grpc-retry-pushback-ms")
	require.Len(t, vs, 1, "one pushback value: %v", md)
	ms, err := strconv.Atoi(vs[0])
	require.NoError(t, err)
	return time.Duration(ms) * time.Millisecond
}

// A call over the limit, with no queue place, never reaches the handler:
// it ends with UNAVAILABLE and a pushback of the Limiter's jittered wait,
// whole seconds in milliseconds, at least one second and at most
// MaxRetryAfter.
func TestUnaryServerInterceptorShedsWithPushback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1, MaxRetryAfter: 5 * time.Second})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		g := &gated{do: block(entered, release)}
		c := serveShed(t, l, g)

		first := make(chan error, 1)
		go func() {
			_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			first <- err
		}()
		<-entered

		var trailer metadata.MD
		_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), "queue full")
		pb := pushbackMS(t, trailer)
		assert.GreaterOrEqual(t, pb, time.Second)
		assert.LessOrEqual(t, pb, 5*time.Second)
		assert.Zero(t, pb%time.Second, "whole seconds: %v", pb)
		assert.Equal(t, int32(1), g.reached.Load(), "the shed call never reached the handler")

		close(release)
		require.NoError(t, <-first)
		s := l.Stats()
		assert.EqualValues(t, 1, s.Admitted)
		assert.EqualValues(t, 1, s.Shed)
		assert.Zero(t, s.InFlight)
	})
}

// The pushback is jittered per call: the calls shed together under
// sustained overload are not all told to come back at one instant.
func TestServerPushbackIsJittered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		c := serveShed(t, l, &gated{do: block(entered, release)})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		}()
		<-entered
		for range 50 { // a second of shedding: the Limiter's window grows with the shed ratio
			_, _ = c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		}
		time.Sleep(time.Second)
		seen := map[time.Duration]int{}
		for range 50 {
			var trailer metadata.MD
			_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
			require.Equal(t, codes.Unavailable, status.Code(err))
			seen[pushbackMS(t, trailer)]++
		}
		close(release)
		<-done
		assert.Greater(t, len(seen), 1, "50 shed calls, one wait: %v", seen)
	})
}

// The priority is read from the metadata key "criticality", which
// WithPriority sets; a call without one is Critical. A full queue of
// Critical calls sheds a Sheddable one at once, and a CriticalPlus one
// takes the place of a queued Sheddable one.
func TestServerInterceptorReadsPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: 1, QueueTimeout: time.Minute})
		entered, release := make(chan struct{}, 4), make(chan struct{})
		g := &gated{do: block(entered, release)}
		c := serveShed(t, l, g)
		ctx := t.Context()
		call := func(ctx context.Context) chan error {
			ch := make(chan error, 1)
			go func() {
				_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
				ch <- err
			}()
			synctest.Wait()
			return ch
		}

		holder := call(ctx)
		<-entered
		queued := call(ctx) // no priority: Critical, queued
		assert.Equal(t, 1, l.Stats().Queued)
		_, err := c.UnaryCall(retrygrpc.WithPriority(ctx, shed.Sheddable), &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.Unavailable, status.Code(err), "a Sheddable call finds the queue full of Critical ones")

		release2 := make(chan struct{})
		close(release)
		require.NoError(t, <-holder)
		<-entered
		require.NoError(t, <-queued)

		// Now a Sheddable call waits, and a CriticalPlus one evicts it.
		entered2 := make(chan struct{}, 4)
		g.do = block(entered2, release2)
		holder = call(ctx)
		<-entered2
		low := call(retrygrpc.WithPriority(ctx, shed.Sheddable))
		high := call(retrygrpc.WithPriority(ctx, shed.CriticalPlus))
		err = <-low
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Contains(t, status.Convert(err).Message(), "evicted")
		close(release2)
		require.NoError(t, <-holder)
		<-entered2
		require.NoError(t, <-high)
		g.mu.Lock()
		defer g.mu.Unlock()
		assert.Equal(t, []string{"critical_plus"}, g.priorities, "only the calls that reached the handler; those without a value sent none")
	})
}

// The handler's status is what its work showed: an overload takes a tenth
// off an AIMD limit after a window of 25, a success is a latency sample,
// and a call its client canceled is no sample at all.
func TestServerInterceptorOutcomes(t *testing.T) {
	for _, tc := range []struct {
		code      codes.Code
		limit     int
		sampled   bool
		canceling bool
	}{
		{codes.OK, 20, true, false},
		{codes.NotFound, 20, true, false},
		{codes.Internal, 20, true, false},
		{codes.Unavailable, 18, true, false},
		{codes.ResourceExhausted, 18, true, false},
		{codes.DeadlineExceeded, 18, true, false},
		{codes.Canceled, 20, false, false},
		{codes.OK, 20, false, true}, // the client canceled; the handler still said OK
	} {
		t.Run(fmt.Sprintf("%v canceling=%v", tc.code, tc.canceling), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newShed(t, shed.Options{Algorithm: shed.AIMD, InitialLimit: 20})
				g := &gated{do: func(ctx context.Context, _ string) error {
					time.Sleep(time.Millisecond)
					if tc.canceling {
						<-ctx.Done()
					}
					return status.Error(tc.code, "scripted") // nil for OK
				}}
				c := serveShed(t, l, g)
				for range 25 {
					ctx, cancel := context.WithCancel(t.Context())
					if tc.canceling {
						go func() {
							time.Sleep(2 * time.Millisecond)
							cancel()
						}()
					}
					_, _ = c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
					cancel()
					synctest.Wait() // the handler has returned and released
				}
				s := l.Stats()
				assert.Equal(t, tc.limit, s.Limit)
				assert.Zero(t, s.InFlight)
				if tc.sampled {
					assert.Equal(t, time.Millisecond, s.Latency, "a sample")
				} else {
					assert.Zero(t, s.Latency, "no sample")
				}
			})
		})
	}
}

// A handler that panics gives its slot back before the panic goes on, to
// a recovery interceptor outside.
func TestServerInterceptorPanicReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
		recovered := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = status.Errorf(codes.Internal, "panic: %v", r)
				}
			}()
			return h(ctx, req)
		}
		g := &gated{do: func(context.Context, string) error { panic("boom") }}
		cc := dialServe(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, g) },
			[]grpc.ServerOption{grpc.ChainUnaryInterceptor(recovered, retrygrpc.UnaryServerInterceptor(l))}, nil)
		c := testgrpc.NewTestServiceClient(cc)
		for range 3 { // a leaked slot would shed the second
			_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			assert.Equal(t, codes.Internal, status.Code(err))
		}
		assert.Zero(t, l.Stats().InFlight)
		assert.Zero(t, l.Stats().Shed)
	})
}

// A call whose client gives up while it waits for a slot ends with its
// ctx's status, with no pushback, and is not counted as shed.
func TestServerInterceptorClientGivesUpInQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, QueueTimeout: time.Minute})
		entered, release := make(chan struct{}, 1), make(chan struct{})
		c := serveShed(t, l, &gated{do: block(entered, release)})
		first := make(chan error, 1)
		go func() {
			_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
			first <- err
		}()
		<-entered
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		var trailer metadata.MD
		_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Empty(t, trailer.Get("grpc-retry-pushback-ms"))
		synctest.Wait()
		assert.Zero(t, l.Stats().Shed)
		assert.Zero(t, l.Stats().Queued)
		close(release)
		require.NoError(t, <-first)
	})
}

// A stream holds its slot until it ends: while one is open, another is
// shed with UNAVAILABLE and a pushback trailer, and once it is closed the
// next one is admitted.
func TestStreamServerInterceptorHoldsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
		g := &gated{}
		c := serveShed(t, l, g)
		echo := func(st testgrpc.TestService_FullDuplexCallClient) error {
			// A Send to a stream the server has ended says io.EOF; Recv
			// has its status.
			if err := st.Send(&testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("x")}}); err != nil && err != io.EOF {
				return err
			}
			_, err := st.Recv()
			return err
		}
		open, err := c.FullDuplexCall(t.Context())
		require.NoError(t, err)
		require.NoError(t, echo(open))
		assert.Equal(t, 1, l.Stats().InFlight, "the open stream holds the slot")

		shedStream, err := c.FullDuplexCall(t.Context())
		require.NoError(t, err)
		err = echo(shedStream)
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.GreaterOrEqual(t, pushbackMS(t, shedStream.Trailer()), time.Second)

		require.NoError(t, open.CloseSend())
		_, err = open.Recv()
		require.Error(t, err) // io.EOF: the handler returned
		synctest.Wait()
		assert.Zero(t, l.Stats().InFlight)

		next, err := c.FullDuplexCall(t.Context())
		require.NoError(t, err)
		require.NoError(t, echo(next))
		require.NoError(t, next.CloseSend())
		_, _ = next.Recv()
		assert.Equal(t, int32(2), g.reached.Load())
		assert.EqualValues(t, 1, l.Stats().Shed)
	})
}

// WithPriority sends the priority on every call made with its ctx; a
// value the caller already put in the outgoing metadata wins.
func TestWithPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{})
		g := &gated{}
		c := serveShed(t, l, g)
		ctx := retrygrpc.WithPriority(t.Context(), shed.SheddablePlus)
		_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		own := metadata.AppendToOutgoingContext(t.Context(), "criticality", "critical_plus")
		_, err = c.UnaryCall(retrygrpc.WithPriority(own, shed.Sheddable), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		g.mu.Lock()
		defer g.mu.Unlock()
		assert.Equal(t, []string{"sheddable_plus", "critical_plus"}, g.priorities)
	})
}
