package retrygrpc

import (
	"context"
	"strconv"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/clocks"
	"github.com/stormguard/retry/retryconfig"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A unary call whose policy has a hedgingPolicy (see [WithPolicies]) is
// hedged as gRFC A6 says: the first copy goes at once, another each
// hedgingDelay while none has answered, up to maxAttempts; a copy that ends
// with OK or with a fatal status (one not in nonFatalStatusCodes) decides
// the call, and the others are cancelled; a non-fatal status sends the next
// copy at once, and the later ones resume hedgingDelay after it. A server's
// pushback that says stop (or asks for WithMaxRetryAfter or more) sends no
// more copies, and one that says wait n ms sends the next one n ms later,
// and holds the target back for every call, as a retry's pushback does.
// With a Budget (retryThrottling), every copy
// after the first needs more than half its tokens, as a retry does; each
// copy that fails with a non-fatal status (or a pushback that says stop)
// takes a token, and each OK gives back tokenRatio. A copy after the first
// is admitted by retry.Policy.AllowAnother, the rule Do's retries and
// retry.Hedge's hedges pass: maxAttempts, the Budget, a closed Breaker.
//
// The race is its own, not retry.HedgeValue's, because A6's copies are
// not retries. With none running, HedgeValue takes Do's rule: a backoff on
// top of the pushback, and a stop at once when the wait would pass the
// deadline; A6 sends the next copy at once, or exactly the pushback later,
// and lets the deadline end the wait. A6 also sends the next copy at once
// after a non-fatal status while others run; has a pushback that stops the
// copies but lets those running answer, which no retry.Decision says;
// sends every copy at once for a hedgingDelay of 0, which to a Hedger
// means adaptive; takes a copy's token when it fails, not as it starts;
// and passes the Breaker and the Throttle once for the whole race.

// hedgedCall is one hedged unary call. Do runs race as the call's one
// attempt, so that MaxElapsed, OnDone, the Trace and an outer retry loop
// see the race as a whole.
type hedgedCall struct {
	unaryCall
	hedging  retryconfig.Hedging
	nonFatal codeSet
	budget   *guard.Budget
	// admit is what a copy after the first must pass (AllowAnother): at
	// most maxAttempts copies, the Budget's half, a closed Breaker.
	admit retry.Policy
	msg   proto.Message // the caller's reply
	// The caller's own header, trailer and peer destinations, which the
	// copies must not write at once: the copy that decides the call fills
	// them when the race is over.
	wantHeader, wantTrailer *metadata.MD
	wantPeer                *peer.Peer

	streamed *hedgedStream // set when the call is a hedged server stream

	fatal     bool  // the race ended with a status that is not non-fatal
	throttled bool  // the Budget refused a copy
	sent      int   // copies sent
	last      error // the deciding copy's error, so far
}

// hedgeCopy is one copy of a hedged call, and what it got back.
type hedgeCopy struct {
	n               int
	reply           proto.Message
	header, trailer metadata.MD
	peer            peer.Peer
	err             error
	panicV          any

	// A copy of a server stream: its stream, and what ends it.
	cs      grpc.ClientStream
	eof     bool               // it ended with OK and no header or message
	release context.CancelFunc // ends the copy's own ctx
	stop    func() bool        // unties the copy's ctx from the race's
}

// hedged returns the hedged call for a call of method with policy p and
// hedging h, or nil when it cannot be hedged and takes the ordinary path:
// it is not marked idempotent, grpc-go retries it itself, or its reply is
// not a protobuf message, of which each copy needs its own.
func (cfg *config) hedged(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, co callOptions, opts []grpc.CallOption, p *retry.Policy, h retryconfig.Hedging) *hedgedCall {
	msg, ok := reply.(proto.Message)
	if !ok || !cfg.idempotentMethod(method, co) || cfg.grpcRetries(cc, method) {
		return nil
	}
	hc := newHedge(ctx, cfg, method, cc, opts, p, h)
	hc.msg, hc.req, hc.reply, hc.invoker = msg, req, reply, invoker
	return hc
}

// newHedge is the part of a hedged call that a unary call and a server
// stream share.
func newHedge(ctx context.Context, cfg *config, method string, cc *grpc.ClientConn, opts []grpc.CallOption, p *retry.Policy, h retryconfig.Hedging) *hedgedCall {
	hc := &hedgedCall{hedging: h, budget: p.Budget}
	hc.admit = retry.Policy{MaxAttempts: h.MaxAttempts, Budget: p.Budget, Breaker: p.Breaker}
	hc.cfg, hc.ctx, hc.method, hc.cc, hc.clk = cfg, ctx, method, cc, p.Clock
	hc.idempotent = true
	for _, c := range h.NonFatalCodes {
		hc.nonFatal = hc.nonFatal.with(codes.Code(c))
	}
	hc.opts = make([]grpc.CallOption, 0, len(opts)+3)
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			hc.wantHeader = o.HeaderAddr
		case grpc.TrailerCallOption:
			hc.wantTrailer = o.TrailerAddr
		case grpc.PeerCallOption:
			hc.wantPeer = o.PeerAddr
		default:
			hc.opts = append(hc.opts, o)
		}
	}
	return hc
}

// run makes the call: Do with one attempt, the race, under the Policy's
// MaxElapsed, Clock and OnDone.
func (hc *hedgedCall) run(p retry.Policy) error {
	// The Breaker and the Throttle see the race as one attempt: a refused
	// one sends no copy, and the race counts once.
	dp := retry.Policy{MaxAttempts: 1, MaxElapsed: p.MaxElapsed, Clock: p.Clock, OnDone: p.OnDone, Breaker: p.Breaker, Throttle: p.Throttle}
	dp.Classifier = func(context.Context, retry.Attempt) retry.Decision {
		// Do makes no other attempt: this only tells a fatal status,
		// which an outer retry loop must not retry either, from copies
		// that all failed in a way another call may fix.
		return retry.Decision{Retry: !hc.fatal, Reason: hc.reason()}
	}
	hc.observe(&dp, hc.done)
	tr, err := retry.Do(hc.ctx, hc.race, dp)
	storeTrace(hc.ctx, tr)
	return hc.result(tr, err)
}

// reason is the Reason of the race in the Trace: how many copies went,
// and the deciding status's fixed name, safe to log.
func (hc *hedgedCall) reason() string {
	r := "hedged: " + strconv.Itoa(hc.sent) + " copies sent; " + status.Code(hc.last).String()
	if hc.throttled {
		r += "; budget refused the next copy"
	}
	return r
}

// race sends the copies and returns the deciding one's error.
func (hc *hedgedCall) race(loop context.Context) error {
	ctx, cancel := context.WithCancel(loop)
	n := hc.hedging.MaxAttempts
	results := make(chan *hedgeCopy, n) // room for every copy: none blocks once the race is over
	running := 0
	var due chan struct{} // closed when the next copy is due; nil when none is scheduled
	var timer clocks.Timer
	schedule := func(d time.Duration) {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		ch := make(chan struct{})
		due = ch
		if d <= 0 {
			close(ch)
			return
		}
		timer = clocks.AfterFunc(hc.clk, d, func() { close(ch) })
	}
	unschedule := func() {
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		due = nil
	}
	defer func() {
		// A6: the call returns once every copy has answered or been
		// cancelled; a cancelled copy returns at once.
		unschedule()
		cancel()
		for ; running > 0; running-- {
			<-results
		}
	}()
	more := true // copies may still be sent
	done := loop.Done()
	send := func() {
		hc.sent++
		running++
		if hc.budget != nil { // a ratio budget counts what is sent: the first copy, then the hedges AllowAnother let go
			if hc.sent == 1 {
				hc.budget.Started()
			} else {
				hc.budget.Retrying()
			}
		}
		cp := &hedgeCopy{n: hc.sent}
		if hc.streamed != nil {
			go hc.streamed.send(ctx, cp, results)
			return
		}
		cp.reply = hc.msg.ProtoReflect().New().Interface()
		go hc.send(ctx, cp, results)
	}
	// The first copy waits for a hold of the target, as an ordinary call's
	// first attempt does; the later ones go on their own schedule, which a
	// pushback sets.
	if err := hc.awaitHold(loop); err != nil {
		hc.fatal, hc.last = true, err
		return err
	}
	send()
	if n > 1 {
		schedule(hc.hedging.Delay)
	}
	for {
		select {
		case <-due:
			unschedule()
			if more && loop.Err() == nil {
				switch hc.admit.AllowAnother(hc.sent) {
				case retry.StopNone:
					send()
					if hc.sent < n {
						schedule(hc.hedging.Delay)
					}
				case retry.StopExhausted:
				case retry.StopBudget:
					// A6: throttled, the hedge is not sent, nor any later one.
					more, hc.throttled = false, true
				default:
					// A hedge never takes a half-open breaker's probe: the
					// first copy is the probe, and no other goes.
					more = false
				}
			}
			if running == 0 {
				return hc.last
			}
		case <-done:
			// The call's deadline or the caller: no copy goes any more,
			// and those running end with the ctx.
			done, more = nil, false
			unschedule()
			if running == 0 {
				return hc.last
			}
		case cp := <-results:
			running--
			if cp.panicV != nil {
				panic(cp.panicV) // the deferred cleanup cancels and reaps the others first
			}
			hc.decide(cp)
			if cp.err == nil {
				if hc.budget != nil {
					hc.budget.Succeeded()
				}
				hc.clearHold()
				if hc.streamed != nil {
					hc.streamed.win(cp)
					return nil
				}
				proto.Reset(hc.msg)
				proto.Merge(hc.msg, cp.reply)
				return nil
			}
			after, goOn := pushback(cp.trailer)
			// A delay past WithMaxRetryAfter stops the copies, as it stops
			// retries; one within it holds the target back too.
			goOn = goOn && after < hc.cfg.maxRetryAfter
			if goOn {
				hc.hold(after)
			}
			nonFatal := hc.nonFatal.has(status.Code(cp.err)) && cp.header == nil
			if hc.budget != nil && (nonFatal || !goOn) {
				hc.budget.Failed()
			}
			if !nonFatal || loop.Err() != nil {
				// A fatal status, or a copy that failed after its
				// response header: the call has committed to it (A6).
				hc.fatal = !nonFatal
				if loop.Err() != nil && hc.ctx.Err() == nil {
					hc.last = newTimeoutError(cp.err) // MaxElapsed ran out
				}
				return hc.last
			}
			switch {
			case !goOn:
				more = false
				unschedule()
			case !more || hc.sent >= n:
			default:
				schedule(after) // at once, or when the server asked
			}
			if running == 0 && due == nil {
				return hc.last
			}
		}
	}
}

// decide makes cp the copy whose answer the caller gets, for now.
func (hc *hedgedCall) decide(cp *hedgeCopy) {
	hc.last = cp.err
	if hc.streamed != nil {
		hc.streamed.trailer = cp.trailer
	}
	if hc.wantHeader != nil {
		*hc.wantHeader = cp.header
	}
	if hc.wantTrailer != nil {
		*hc.wantTrailer = cp.trailer
	}
	if hc.wantPeer != nil {
		*hc.wantPeer = cp.peer
	}
}

// send makes copy cp of the call, on a goroutine of its own, and hands it
// to results.
func (hc *hedgedCall) send(ctx context.Context, cp *hedgeCopy, results chan<- *hedgeCopy) {
	defer func() {
		if v := recover(); v != nil {
			cp.panicV = v
		}
		results <- cp
	}()
	wctx, release := hc.wireCtx(ctx)
	defer release()
	opts := append(hc.opts[:len(hc.opts):len(hc.opts)], grpc.Header(&cp.header), grpc.Trailer(&cp.trailer))
	if hc.wantPeer != nil {
		opts = append(opts, grpc.Peer(&cp.peer))
	}
	cp.err = hc.invoker(withAttemptHeader(wctx, cp.n), hc.method, hc.req, cp.reply, hc.cc, opts...)
}
