package retrygrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// StreamClientInterceptor returns an interceptor that retries streams as
// [UnaryClientInterceptor] retries calls, with the same Options, rules and
// errors, for as long as a retry is safe. Install it with
// grpc.WithChainStreamInterceptor (or grpc.WithStreamInterceptor).
//
// A server-streaming call is retried until it commits (gRFC A6): once the
// client has received a response header or message, an error is returned as
// it is. The stream opens, and its request goes out, when NewStream and
// SendMsg are called, as without the interceptor; the retry loop runs in the
// first RecvMsg or Header call, which returns once an attempt has committed,
// ended with OK, or failed for good. Each retry opens a new stream and sends
// it the same request message: the message passed to SendMsg must not be
// changed until the stream has committed. An error that would come from
// NewStream without the interceptor, such as UNAVAILABLE when no connection
// can be had, comes from that first RecvMsg or Header, after the retries.
// p.AttemptTimeout and p.MaxElapsed bound each attempt, the first one
// included, only until it commits: the loop waits for the response header,
// even when RecvMsg runs it, so they never cut short a stream that is
// under way, however long its first message takes. A committed stream
// belongs to the caller's ctx alone. AttemptTimeout counts from the opening
// of each attempt; MaxElapsed, like the Trace, from the first RecvMsg or
// Header.
//
// A client-streaming or bidi stream is retried only while it opens, when
// nothing has been sent: the interceptor keeps no copy of the messages a
// client streams, so it cannot replay them. Once open, its errors come back
// as they are, except that one the interceptor would otherwise have retried
// also matches [ErrNotReplayed] and says so.
//
// With [WithPolicies], a server-streaming method whose policy has a
// hedgingPolicy is hedged instead of retried (see WithPolicies): its
// grpc.Header option gets the winning copy's header when the race ends, and
// its grpc.Trailer and grpc.Peer options the winner's when the stream ends.
//
// A stream's Trace (see [WithTrace]) and p.OnDone come when the retry loop
// ends: when a client-streaming or bidi stream has opened, and when a
// server-streaming one has committed or failed for good. A server-streaming
// stream on which neither RecvMsg nor Header is called has no retry loop,
// and so no Trace and no OnDone.
func StreamClientInterceptor(p retry.Policy, opts ...Option) grpc.StreamClientInterceptor {
	return newConfig(p, opts).interceptStream
}

// The states of a server-streaming stream.
const (
	pending   int32 = iota // attempts may still be retried: the loop has not run
	committed              // an attempt committed: calls go to it
	ended                  // the loop ended with no committed attempt: final says how
)

// errAbandoned is what a stream returns after its retry loop panicked.
var errAbandoned = errors.New("retrygrpc: stream abandoned after a panic in its retry loop")

// stream is one stream through the interceptor. A server-streaming stream
// is itself the ClientStream the caller gets; a client-streaming or bidi
// one hands the caller an openStream once it has opened.
type stream struct {
	call
	desc     *grpc.StreamDesc
	streamer grpc.Streamer
	opts     []grpc.CallOption
	policy   retry.Policy  // with c's Classifier, and no AttemptTimeout
	timeout  time.Duration // the Policy's AttemptTimeout, which the stream keeps itself

	state    atomic.Int32
	settling sync.Mutex // held while the retry loop runs
	final    error      // once ended: what RecvMsg returns

	// mu guards what SendMsg and CloseSend share with the retry loop: the
	// current attempt, and what it must be sent again.
	mu     sync.Mutex
	cur    *attempt
	msg    any
	hasMsg bool
	closed bool

	n       int         // attempts opened
	started bool        // the retry loop has taken the first attempt
	eof     bool        // the loop ended on an attempt that ended with OK and no message
	header  metadata.MD // the header that committed the stream, from Header
}

func (cfg *config) interceptStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	co := callOptionsOf(opts)
	p, h, hedged := cfg.policyAndHedging(method)
	if co.policy != nil {
		p, hedged = *co.policy, false
	}
	cfg.guardPolicy(cc, &p)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if hedged {
		if hs := cfg.hedgedStream(ctx, desc, cc, method, streamer, co, opts, &p, h); hs != nil {
			return hs, nil
		}
	}
	s := &stream{desc: desc, streamer: streamer, opts: opts}
	s.init(cfg, ctx, method, cc, co, &p, s.decide)
	s.observe(&p, s.done) // WithOnDone
	if p.AttemptTimeout > 0 {
		// Do's own AttemptTimeout would end the stream's ctx when its op
		// returns; the stream times its attempts until they commit instead.
		s.timeout, p.AttemptTimeout = p.AttemptTimeout, 0
	}
	s.policy = p
	if desc.ClientStreams {
		return s.openOnce()
	}
	s.n = 1
	s.cur = s.open(ctx)
	return s, nil
}

// SendMsg sends m on the current attempt and keeps it, for a
// server-streaming call, to send it again on a retry.
func (s *stream) SendMsg(m any) error {
	s.mu.Lock()
	if !s.hasMsg && s.state.Load() == pending {
		s.msg, s.hasMsg = m, true
	}
	a := s.cur
	s.mu.Unlock()
	if a.cs == nil {
		// The attempt could not open: m is kept for the retries, and the
		// first RecvMsg or Header says how they went.
		return nil
	}
	return a.cs.SendMsg(m)
}

// CloseSend half-closes the current attempt, and every retry after it.
func (s *stream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	a := s.cur
	s.mu.Unlock()
	if a.cs == nil {
		return nil
	}
	return a.cs.CloseSend()
}

// RecvMsg runs the retry loop the first time, then reads from the
// committed attempt.
//
// The loop waits for a response header, not for m: a stream commits on its
// header (gRFC A6), so the wait for its first message, however long, is
// the stream's own and no time limit of the Policy cuts it short.
func (s *stream) RecvMsg(m any) error {
	if s.state.Load() == pending {
		s.settle(s.waitHeader)
	}
	if s.state.Load() == ended {
		return s.final
	}
	a := s.cur // set for good before the state became committed
	err := a.cs.RecvMsg(m)
	if err != nil {
		a.release() // the stream is over
	}
	return err
}

// Header runs the retry loop if RecvMsg has not, then returns the header of
// the committed attempt, or nil when there is none (RecvMsg then says why).
func (s *stream) Header() (metadata.MD, error) {
	if s.state.Load() == pending && s.settle(s.waitHeader) && s.state.Load() == committed {
		return s.header, nil
	}
	a := s.current()
	if a.cs == nil {
		return nil, nil
	}
	return a.cs.Header()
}

// Trailer returns the trailer of the current attempt.
func (s *stream) Trailer() metadata.MD {
	if a := s.current(); a.cs != nil {
		return a.cs.Trailer()
	}
	return nil
}

// Context returns the ctx of the current attempt's stream.
func (s *stream) Context() context.Context {
	if a := s.current(); a.cs != nil {
		return a.cs.Context()
	}
	return s.ctx
}

func (s *stream) current() *attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}
