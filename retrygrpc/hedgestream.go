package retrygrpc

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
)

// A server-streaming call whose policy has a hedgingPolicy is hedged as a
// unary call is (see hedge.go), with the race run in the first RecvMsg or
// Header: each copy opens a stream of its own, sends it the request message
// and waits for it to commit (gRFC A6: a response header, or the end with
// OK). The first copy to commit wins and is the caller's stream from then
// on; the others are cancelled. Client-streaming and bidi streams are not
// hedged: the interceptor keeps no copy of what the caller streams.

// hedgedStream is one hedged server stream, the ClientStream the caller
// gets.
type hedgedStream struct {
	hc       *hedgedCall
	desc     *grpc.StreamDesc
	streamer grpc.Streamer
	policy   retry.Policy

	state    atomic.Int32 // pending, committed or ended, as for stream
	settling sync.Mutex   // held while the race runs
	final    error        // once ended: what RecvMsg returns
	won      *hedgeCopy   // the copy that committed; set before state is committed
	trailer  metadata.MD  // the deciding copy's trailer, when none committed

	mu     sync.Mutex // guards what SendMsg and CloseSend share with the copies
	msg    any
	hasMsg bool
	closed bool
}

// hedgedStream returns the hedged stream for a server-streaming call of
// method, or nil when it cannot be hedged: it is not marked idempotent, or
// grpc-go retries it itself.
func (cfg *config) hedgedStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, co callOptions, opts []grpc.CallOption, p *retry.Policy, h retryconfig.Hedging) *hedgedStream {
	if desc.ClientStreams || !cfg.idempotentMethod(method, co) || cfg.grpcRetries(cc, method) {
		return nil
	}
	hs := &hedgedStream{desc: desc, streamer: streamer, policy: *p}
	hs.hc = newHedge(ctx, cfg, method, cc, opts, p, h)
	hs.hc.streamed = hs
	return hs
}

// send makes copy cp of the stream, on a goroutine of its own, and hands it
// to results once it has committed or failed. Its ctx comes from the
// caller's, not from race's, which ends with the race: the winner outlives
// it. Until the winner unties it (see win), race's end cancels it.
func (hs *hedgedStream) send(race context.Context, cp *hedgeCopy, results chan<- *hedgeCopy) {
	hc := hs.hc
	own, cancel := context.WithCancel(hc.ctx)
	cp.release, cp.stop = cancel, context.AfterFunc(race, cancel)
	defer func() {
		if v := recover(); v != nil {
			cp.panicV = v
		}
		if cp.err != nil || cp.panicV != nil || cp.eof {
			cp.stop()
			cp.release()
		}
		results <- cp
	}()
	hs.mu.Lock()
	msg, hasMsg, closed := hs.msg, hs.hasMsg, hs.closed
	hs.mu.Unlock()
	opts := hc.opts[:len(hc.opts):len(hc.opts)]
	if hc.wantPeer != nil {
		opts = append(opts, grpc.Peer(&cp.peer))
	}
	cs, err := hs.streamer(withAttemptHeader(own, cp.n), hs.desc, hc.cc, hc.method, opts...)
	if err != nil {
		cp.err = err
		return
	}
	cp.cs = cs
	if hasMsg {
		// io.EOF means the stream has ended: its status comes below.
		if err := cs.SendMsg(msg); err != nil && err != io.EOF {
			cp.err = err
			return
		}
	}
	if closed {
		_ = cs.CloseSend() // grpc's CloseSend errors show in RecvMsg
	}
	md, err := cs.Header()
	switch {
	case md != nil:
		cp.header = md
		return
	case err == nil:
		// The stream ended before any header, so with no message either:
		// RecvMsg gives its status and decodes nothing into the probe.
		err = cs.RecvMsg(new(emptypb.Empty))
	}
	if err == io.EOF {
		cp.eof = true
		return
	}
	cp.err, cp.trailer = err, cs.Trailer()
}

// win makes cp, which committed, the caller's stream: race's end no longer
// cancels it. Should the race's ctx have ended first, the copy's has too,
// and its RecvMsg says so.
func (hs *hedgedStream) win(cp *hedgeCopy) {
	cp.stop()
	hs.won = cp
}

// settle runs the race, unless another call already has.
func (hs *hedgedStream) settle() {
	hs.settling.Lock()
	defer hs.settling.Unlock()
	if hs.state.Load() != pending {
		return
	}
	returned := false
	defer func() {
		if !returned { // a panic in the Policy's hooks or below the interceptor
			hs.final = errAbandoned
			hs.state.Store(ended)
		}
	}()
	err := hs.hc.run(hs.policy)
	switch {
	case err == nil && hs.won != nil && !hs.won.eof:
		hs.state.Store(committed)
	case err == nil:
		hs.final = io.EOF
		hs.state.Store(ended)
	default:
		hs.final = err
		hs.state.Store(ended)
	}
	returned = true
}

// SendMsg keeps m for the copies, or sends it on the committed stream.
func (hs *hedgedStream) SendMsg(m any) error {
	if hs.state.Load() == committed {
		return hs.won.cs.SendMsg(m)
	}
	hs.mu.Lock()
	if !hs.hasMsg {
		hs.msg, hs.hasMsg = m, true
	}
	hs.mu.Unlock()
	return nil
}

// CloseSend half-closes every copy, or the committed stream.
func (hs *hedgedStream) CloseSend() error {
	if hs.state.Load() == committed {
		return hs.won.cs.CloseSend()
	}
	hs.mu.Lock()
	hs.closed = true
	hs.mu.Unlock()
	return nil
}

// RecvMsg runs the race the first time, then reads from the winner.
func (hs *hedgedStream) RecvMsg(m any) error {
	if hs.state.Load() == pending {
		hs.settle()
	}
	if hs.state.Load() == ended {
		return hs.final
	}
	cp := hs.won
	err := cp.cs.RecvMsg(m)
	if err != nil {
		cp.release() // the stream is over
		hc := hs.hc
		if hc.wantTrailer != nil {
			*hc.wantTrailer = cp.cs.Trailer()
		}
		if hc.wantPeer != nil {
			*hc.wantPeer = cp.peer
		}
	}
	return err
}

// Header runs the race if RecvMsg has not, then returns the winner's
// header; when no copy committed, nil and the call's error, as grpc's
// Header does (nil, nil if the stream ended with OK and no header).
func (hs *hedgedStream) Header() (metadata.MD, error) {
	if hs.state.Load() == pending {
		hs.settle()
	}
	if hs.state.Load() == committed {
		return hs.won.header, nil
	}
	if hs.final == io.EOF {
		return nil, nil
	}
	return nil, hs.final
}

// Trailer returns the winner's trailer, or the deciding copy's.
func (hs *hedgedStream) Trailer() metadata.MD {
	if hs.state.Load() == committed {
		return hs.won.cs.Trailer()
	}
	if hs.state.Load() == ended {
		return hs.trailer
	}
	return nil
}

// Context returns the winner's stream ctx, or the caller's before one won.
func (hs *hedgedStream) Context() context.Context {
	if hs.state.Load() == committed {
		return hs.won.cs.Context()
	}
	return hs.hc.ctx
}
