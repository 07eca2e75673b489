package retrygrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestMain fails the package's tests if any goroutine outlives them: no
// attempt, timer or stream of the interceptors may leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Full method names of the test service's methods.
const (
	unaryMethod  = "/grpc.testing.TestService/UnaryCall"
	emptyMethod  = "/grpc.testing.TestService/EmptyCall"
	outMethod    = "/grpc.testing.TestService/StreamingOutputCall"
	inMethod     = "/grpc.testing.TestService/StreamingInputCall"
	duplexMethod = "/grpc.testing.TestService/FullDuplexCall"
)

// reply is what the test server does with one call.
type reply struct {
	code      codes.Code    // the status it ends with: OK, or an error
	pushback  []string      // values of the grpc-retry-pushback-ms trailer
	retryInfo time.Duration // a google.rpc.RetryInfo detail, if positive
	block     bool          // wait for the call's ctx to end, then end with its status
	header    bool          // send the response header first
	messages  int           // server streams: messages sent before the status
	pause     time.Duration // server streams: pause before each message after the first
	delay     time.Duration // server streams: pause before the first message
}

// fail is a reply that ends with code.
func fail(code codes.Code) reply { return reply{code: code} }

// seen is what the test server saw of one call.
type seen struct {
	method   string
	previous []string // grpc-previous-rpc-attempts
	payload  string
	deadline time.Duration // how far the call's deadline lay, or 0 without one
}

// server is a gRPC test service whose i-th call gets script[i] (the last
// entry answers every later call) and that records every call.
type server struct {
	testgrpc.UnimplementedTestServiceServer

	arrived chan struct{} // a value for each call, for tests that act on an attempt under way

	// failFirst, if set, fails the first failFirst attempts of every call
	// with UNAVAILABLE, counted by grpc-previous-rpc-attempts, before the
	// script answers.
	failFirst int

	mu     sync.Mutex
	script []reply
	calls  []seen
}

func newServer(script ...reply) *server {
	return &server{script: script, arrived: make(chan struct{}, 64)}
}

// next records a call and returns what to do with it.
func (s *server) next(ctx context.Context, method, payload string) reply {
	md, _ := metadata.FromIncomingContext(ctx)
	c := seen{method: method, previous: md.Get("grpc-previous-rpc-attempts"), payload: payload}
	if d, ok := ctx.Deadline(); ok {
		c.deadline = time.Until(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	if s.failFirst > 0 {
		before := 0 // attempts of this call before this one
		if len(c.previous) > 0 {
			before, _ = strconv.Atoi(c.previous[0])
		}
		if before < s.failFirst {
			return fail(codes.Unavailable)
		}
	}
	if len(s.script) == 0 {
		return reply{}
	}
	return s.script[min(len(s.calls), len(s.script))-1]
}

func (s *server) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.calls...)
}

// previous returns the grpc-previous-rpc-attempts of each call, "" where
// there was none.
func (s *server) previous() []string {
	var out []string
	for _, c := range s.seen() {
		v := ""
		if len(c.previous) > 0 {
			v = c.previous[0]
		}
		out = append(out, v)
	}
	return out
}

// end sets the trailer r asks for and returns r's status error, after
// waiting for ctx if r blocks.
func (r reply) end(ctx context.Context, setTrailer func(metadata.MD)) error {
	if r.block {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	if len(r.pushback) > 0 {
		setTrailer(metadata.MD{"grpc-retry-pushback-ms": r.pushback})
	}
	if r.code == codes.OK {
		return nil
	}
	st := status.New(r.code, "scripted "+r.code.String())
	if r.retryInfo > 0 {
		st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(r.retryInfo)})
	}
	return st.Err()
}

func (s *server) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	r := s.next(ctx, unaryMethod, string(req.GetPayload().GetBody()))
	if r.header {
		if err := grpc.SendHeader(ctx, metadata.Pairs("attempt", "header")); err != nil {
			return nil, err
		}
	}
	if err := r.end(ctx, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) }); err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (s *server) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	r := s.next(ctx, emptyMethod, "")
	if err := r.end(ctx, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) }); err != nil {
		return nil, err
	}
	return &testgrpc.Empty{}, nil
}

func (s *server) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, st testgrpc.TestService_StreamingOutputCallServer) error {
	ctx := st.Context()
	r := s.next(ctx, outMethod, string(req.GetPayload().GetBody()))
	if r.header {
		if err := st.SendHeader(metadata.Pairs("attempt", "header")); err != nil {
			return err
		}
	}
	for i := range r.messages {
		wait := r.pause
		if i == 0 {
			wait = r.delay
		}
		if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return status.FromContextError(ctx.Err()).Err()
			}
		}
		body := []byte{byte('a' + i)}
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: body}}); err != nil {
			return err
		}
	}
	return r.end(ctx, st.SetTrailer)
}

func (s *server) StreamingInputCall(st testgrpc.TestService_StreamingInputCallServer) error {
	ctx := st.Context()
	var body []byte
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		body = append(body, m.GetPayload().GetBody()...)
	}
	r := s.next(ctx, inMethod, string(body))
	if err := r.end(ctx, st.SetTrailer); err != nil {
		return err
	}
	return st.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: int32(len(body))})
}

func (s *server) FullDuplexCall(st testgrpc.TestService_FullDuplexCallServer) error {
	ctx := st.Context()
	r := s.next(ctx, duplexMethod, "")
	if r.code != codes.OK || r.block {
		return r.end(ctx, st.SetTrailer)
	}
	for { // echo
		m, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: m.GetPayload()}); err != nil {
			return err
		}
	}
}

// dial serves srv on an in-memory listener and returns a client of it
// whose ClientConn has opts. Both are closed when the test ends.
func dial(t *testing.T, srv *server, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	t.Helper()
	return testgrpc.NewTestServiceClient(dialConn(t, srv, opts...))
}

func dialConn(t *testing.T, srv *server, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return dialWith(t, srv, nil, nil, opts...)
}

// dialWith is dialConn with options for the server, and wrap, if not nil,
// wrapped around each connection the server accepts.
func dialWith(t *testing.T, srv *server, sopts []grpc.ServerOption, wrap func(net.Conn) net.Conn, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return dialServe(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) }, sopts, wrap, opts...)
}

// dialRaw serves what register registers on bufconn and returns a
// ClientConn to it with opts; both are closed when the test ends.
func dialRaw(t *testing.T, register func(*grpc.Server), opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return dialServe(t, register, nil, nil, opts...)
}

// dialServe is dialRaw with options for the server, and wrap, if not nil,
// wrapped around each connection the server accepts.
func dialServe(t *testing.T, register func(*grpc.Server), sopts []grpc.ServerOption, wrap func(net.Conn) net.Conn, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return dialServeAs(t, "passthrough:///bufconn", register, sopts, wrap, opts...)
}

// dialServeAs is dialServe for a ClientConn whose target is target, so
// that a test can tell two services apart.
func dialServeAs(t *testing.T, target string, register func(*grpc.Server), sopts []grpc.ServerOption, wrap func(net.Conn) net.Conn, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	buf := bufconn.Listen(1 << 16)
	var lis net.Listener = buf
	if wrap != nil {
		lis = wrappedListener{buf, wrap}
	}
	s := grpc.NewServer(append(sopts, grpc.WaitForHandlers(true))...)
	register(s)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return buf.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)
	cc, err := grpc.NewClient(target, opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		cc.Close()
		s.Stop()
		<-served
	})
	return cc
}

// wrappedListener wraps each connection it accepts.
type wrappedListener struct {
	net.Listener
	wrap func(net.Conn) net.Conn
}

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.wrap(c), nil
}

// withRetry returns the dial options that install both interceptors.
func withRetry(p retry.Policy, opts ...retrygrpc.Option) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(p, opts...))
}

func withStreamRetry(p retry.Policy, opts ...retrygrpc.Option) grpc.DialOption {
	return grpc.WithChainStreamInterceptor(retrygrpc.StreamClientInterceptor(p, opts...))
}

// unary makes one UnaryCall with payload body and returns its Trace.
func unary(ctx context.Context, c testgrpc.TestServiceClient, body string, opts ...grpc.CallOption) (retry.Trace, error) {
	var tr retry.Trace
	_, err := c.UnaryCall(retrygrpc.WithTrace(ctx, &tr), &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte(body)}}, opts...)
	return tr, err
}

// noJitter is a Jitter that waits nothing but what the server asks for, so
// that a test reads the server's wait alone in the Trace.
type noJitter struct{}

func (noJitter) Wait(retry.Step, float64) time.Duration { return 0 }

// fast returns a Policy whose waits are a millisecond at most: tests run in
// synctest bubbles, where waits cost no real time, but short waits keep
// Traces readable.
func fast() retry.Policy {
	return retry.Policy{BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
}

// reasons returns the Reason of each attempt of tr.
func reasons(tr retry.Trace) []string {
	var out []string
	for a := range tr.All() {
		out = append(out, a.Reason)
	}
	return out
}

// errorIs is errors.Is, for a table's bool column.
func errorIs(err, target error) bool { return errors.Is(err, target) }
