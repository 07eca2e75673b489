package retrygrpc_test

import (
	"fmt"
	"io"
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
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
)

// streamReply is what the stream hedge server does with one copy of a
// server stream: wait after (unless cancelled), then fail with code before
// any header, or send a header and msgs messages and end with end.
type streamReply struct {
	after  time.Duration
	code   codes.Code // before any header; OK: the header and messages go
	msgs   int
	end    codes.Code // the status after the messages
	header bool       // send a header at once, before after
}

// streamHedgeServer answers the n-th copy of StreamingOutputCall (by
// grpc-previous-rpc-attempts) with script[n], the last entry for later ones.
type streamHedgeServer struct {
	testgrpc.UnimplementedTestServiceServer
	start     time.Time
	script    []streamReply
	byArrival bool // script[i] answers the i-th copy to arrive, of any call

	mu   sync.Mutex
	seen []copySeen
}

func (s *streamHedgeServer) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, st testgrpc.TestService_StreamingOutputCallServer) error {
	ctx := st.Context()
	md, _ := metadata.FromIncomingContext(ctx)
	prev := ""
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) > 0 {
		prev = v[0]
	}
	n, _ := strconv.Atoi(prev)
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, copySeen{previous: prev, at: time.Since(s.start)})
	if s.byArrival {
		n = i
	}
	r := s.script[min(n, len(s.script)-1)]
	s.mu.Unlock()
	if string(req.GetPayload().GetBody()) != "req" {
		return status.Error(codes.InvalidArgument, "the copy lacks the request")
	}
	if r.header {
		_ = st.SendHeader(metadata.Pairs("copy", strconv.Itoa(n+1)))
	}
	select {
	case <-time.After(r.after):
	case <-ctx.Done():
		s.mu.Lock()
		s.seen[i].cancelled = true
		s.mu.Unlock()
		return status.FromContextError(ctx.Err()).Err()
	}
	if r.code != codes.OK {
		return status.Error(r.code, "scripted "+r.code.String())
	}
	_ = st.SendHeader(metadata.Pairs("copy", strconv.Itoa(n+1)))
	for k := range r.msgs {
		body := fmt.Sprintf("copy %d #%d", n+1, k)
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: []byte(body)}}); err != nil {
			return err
		}
	}
	if r.end != codes.OK {
		return status.Error(r.end, "scripted end "+r.end.String())
	}
	return nil
}

func (s *streamHedgeServer) copies() []copySeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]copySeen(nil), s.seen...)
	// Sorted by copy number, as hedgeServer.copies does.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			x, _ := strconv.Atoi(out[i].previous)
			y, _ := strconv.Atoi(out[j].previous)
			if y < x {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func (s *streamHedgeServer) arrivals() []time.Duration {
	var out []time.Duration
	for _, c := range s.copies() {
		out = append(out, c.at)
	}
	return out
}

// streamHedgingConfig hedges StreamingOutputCall.
func streamHedgingConfig(t *testing.T, maxAttempts int, delay string, nonFatal string) *retryconfig.Config {
	t.Helper()
	codesJSON := "[]"
	if nonFatal != "" {
		codesJSON = `["` + nonFatal + `"]`
	}
	sc := fmt.Sprintf(`{"methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}],
		"hedgingPolicy": {"maxAttempts": %d, "hedgingDelay": %q, "nonFatalStatusCodes": %s}}]}`, maxAttempts, delay, codesJSON)
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err, sc)
	return cfg
}

func dialStreamHedged(t *testing.T, srv *streamHedgeServer, cfg *retryconfig.Config) testgrpc.TestServiceClient {
	t.Helper()
	cc := dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) },
		grpc.WithDisableRetry(), withStreamRetry(retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
	return testgrpc.NewTestServiceClient(cc)
}

// readAll reads the stream to its end: the bodies, and the error that
// ended it (nil for io.EOF).
func readAll(st testgrpc.TestService_StreamingOutputCallClient) ([]string, error) {
	var got []string
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(m.GetPayload().GetBody()))
	}
}

func openStream(t *testing.T, c testgrpc.TestServiceClient) testgrpc.TestService_StreamingOutputCallClient {
	t.Helper()
	st, err := c.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("req")}})
	require.NoError(t, err)
	return st
}

// A server stream is hedged: a copy each hedgingDelay, each with the
// request and its grpc-previous-rpc-attempts; the first to send a header
// wins, its messages are the caller's, and the others are cancelled. The
// old interceptor made one attempt, and so waited for the first copy.
func TestHedgeStreamCopiesEveryDelayFirstHeaderWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: time.Second, msgs: 1},
			{after: time.Second, msgs: 1},
			{after: 50 * time.Millisecond, msgs: 2},
		}}
		c := dialStreamHedged(t, srv, streamHedgingConfig(t, 4, "0.1s", ""))
		start := time.Now()
		st := openStream(t, c)
		md, err := st.Header()
		require.NoError(t, err)
		assert.Equal(t, []string{"3"}, md.Get("copy"), "the winner's header")
		assert.Equal(t, 250*time.Millisecond, time.Since(start), "the third copy commits 50ms after it went, at 200ms")
		got, err := readAll(st)
		require.NoError(t, err)
		assert.Equal(t, []string{"copy 3 #0", "copy 3 #1"}, got)
		synctest.Wait()
		seen := srv.copies()
		require.Len(t, seen, 3, "the fourth copy is never sent")
		assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, srv.arrivals())
		assert.Equal(t, []string{"", "1", "2"}, []string{seen[0].previous, seen[1].previous, seen[2].previous})
		assert.True(t, seen[0].cancelled && seen[1].cancelled, "the losers' server contexts are cancelled: %+v", seen)
		assert.False(t, seen[2].cancelled)
	})
}

// A hedgingDelay of 0 opens every copy at once, and the first RecvMsg runs
// the race. The winner answers 10ms in, not at once: a header sent at once
// could commit the race before the other copies, sent at the same instant,
// reach the server.
func TestHedgeStreamZeroDelayOpensAllAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: time.Second, msgs: 1},
			{after: time.Second, msgs: 1},
			{after: 10 * time.Millisecond, msgs: 1},
		}}
		c := dialStreamHedged(t, srv, streamHedgingConfig(t, 3, "0s", ""))
		got, err := readAll(openStream(t, c))
		require.NoError(t, err)
		assert.Equal(t, []string{"copy 3 #0"}, got)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, 0, 0}, srv.arrivals())
	})
}

// A copy that fails with a non-fatal code before committing sends the next
// at once, not a hedgingDelay later.
func TestHedgeStreamNonFatalSendsNextAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: 10 * time.Millisecond, code: codes.Unavailable},
			{after: 10 * time.Millisecond, msgs: 1},
		}}
		c := dialStreamHedged(t, srv, streamHedgingConfig(t, 3, "1s", "UNAVAILABLE"))
		start := time.Now()
		var header metadata.MD
		st, err := c.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("req")}}, grpc.Header(&header))
		require.NoError(t, err)
		got, err := readAll(st)
		require.NoError(t, err)
		assert.Equal(t, []string{"copy 2 #0"}, got)
		assert.Equal(t, []string{"2"}, header.Get("copy"), "grpc.Header gets the winner's header")
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, 10 * time.Millisecond}, srv.arrivals())
	})
}

// A fatal code ends the call with that status, and no more copies go.
func TestHedgeStreamFatalEndsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: 10 * time.Millisecond, code: codes.InvalidArgument},
			{after: time.Second, msgs: 1},
		}}
		c := dialStreamHedged(t, srv, streamHedgingConfig(t, 3, "0.1s", "UNAVAILABLE"))
		st := openStream(t, c)
		md, err := st.Header()
		assert.Nil(t, md)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "Header gives the call's status")
		got, err := readAll(st)
		assert.Empty(t, got)
		require.Error(t, err)
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, srv.copies(), 1, "no copy after the fatal status")
	})
}

// Once a copy has committed, the stream is the caller's: a non-fatal
// failure after its first message comes back as it is, and nothing is
// sent again.
func TestHedgeStreamCommittedNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: 10 * time.Millisecond, msgs: 1, end: codes.Unavailable},
		}}
		c := dialStreamHedged(t, srv, streamHedgingConfig(t, 3, "0.1s", "UNAVAILABLE"))
		got, err := readAll(openStream(t, c))
		assert.Equal(t, []string{"copy 1 #0"}, got)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, srv.copies(), 1, "a committed stream is not sent again")
	})
}

// Seam: retryThrottling applies to a hedged stream as to a hedged call. A
// copy that fails non-fatally takes a token; with half the tokens gone the
// next copy is not sent, and the call ends with the status it had.
func TestHedgeStreamThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: 10 * time.Millisecond, code: codes.Unavailable},
			{after: 10 * time.Millisecond, msgs: 1},
		}}
		cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}],
			"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}],
			"retryThrottling": {"maxTokens": 2, "tokenRatio": 0.1}}`))
		require.NoError(t, err)
		c := dialStreamHedged(t, srv, cfg)
		var tr retry.Trace
		st, err := c.StreamingOutputCall(retrygrpc.WithTrace(t.Context(), &tr), &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("req")}})
		require.NoError(t, err)
		_, err = readAll(st)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, srv.copies(), 1, "the budget refused the second copy")
		require.Equal(t, 1, tr.Attempts(), "the race is one attempt in the Trace")
		assert.Equal(t, "hedged: 1 copies sent; Unavailable; budget refused the next copy", tr.Last().Reason)
	})
}

// A hedged server stream goes through the target's Breaker as one call: a
// race whose copies all fail opens it, an open breaker sends no copy, and
// the half-open probe is the first copy alone, never a hedge.
func TestHedgeStreamBreakerNeverTakesAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &streamHedgeServer{start: time.Now(), script: []streamReply{
			{after: 10 * time.Millisecond, code: codes.Unavailable},
			{after: 10 * time.Millisecond, code: codes.Unavailable},
			{after: time.Second, msgs: 1}, // the probe: slow, then a message
		}, byArrival: true}
		bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, OpenFor: 10 * time.Second, Probes: 1}, 10)
		require.NoError(t, err)
		cfg := streamHedgingConfig(t, 2, "0.1s", "UNAVAILABLE")
		cc := dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) },
			grpc.WithDisableRetry(), withStreamRetry(retry.Policy{}, retrygrpc.WithAllIdempotent(),
				retrygrpc.WithPolicies(retryconfig.NewLive(cfg)), retrygrpc.WithGuards(guard.Keyed{Breakers: bs})))
		c := testgrpc.NewTestServiceClient(cc)
		call := func() ([]string, error) {
			st, err := c.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("req")}})
			if err != nil {
				return nil, err
			}
			return readAll(st)
		}

		_, err = call()
		require.Equal(t, codes.Unavailable, status.Code(err))
		require.Len(t, srv.copies(), 2, "both copies of the race")
		var br *guard.Breaker
		for _, b := range bs.All() {
			br = b
		}
		require.NotNil(t, br)
		require.Equal(t, guard.BreakerOpen, br.State(), "the race counted as one failed call")

		_, err = call()
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Len(t, srv.copies(), 2, "an open breaker sends no copy")

		time.Sleep(10 * time.Second)
		require.Equal(t, guard.BreakerHalfOpen, br.State())
		got, err := call()
		require.NoError(t, err)
		assert.Len(t, got, 1)
		assert.Len(t, srv.copies(), 3, "the probe, and no hedge")
		assert.Equal(t, guard.BreakerClosed, br.State())
	})
}
