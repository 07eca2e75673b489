package retrygrpc

import (
	"context"
	"io"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The retry loop of a server-streaming stream: it runs in the first RecvMsg
// or Header, and ends when an attempt commits (gRFC A6: a response header or
// message has come), ends with OK, or fails for good.

// waitHeader is the wait of a retry loop run by Header: it commits on a
// response header.
func (s *stream) waitHeader(a *attempt) error {
	md, err := a.cs.Header()
	switch {
	case md != nil:
		s.header = md
		return nil
	case err != nil:
		return err
	}
	// The attempt ended before any header (grpc's Header then returns
	// nil, nil), so with no message either: RecvMsg gives its status and
	// decodes nothing into the probe.
	return a.cs.RecvMsg(new(emptypb.Empty))
}

// settle runs the retry loop of a server-streaming stream, unless another
// call already has, and reports whether this call ran it. wait gets an
// open attempt and returns nil once it has committed, io.EOF if it ended
// with OK and no message, or its error.
func (s *stream) settle(wait func(*attempt) error) (ran bool) {
	s.settling.Lock()
	defer s.settling.Unlock()
	if s.state.Load() != pending {
		return false
	}
	returned := false
	defer func() {
		if !returned { // a panic in the Policy's hooks or below the interceptor
			s.current().release()
			s.final = errAbandoned
			s.state.Store(ended)
		}
	}()
	tr, err := retry.Do(s.ctx, func(loop context.Context) error { return s.attempt(loop, wait) }, s.policy)
	storeTrace(s.ctx, tr)
	switch {
	case err == nil && !s.eof:
		s.state.Store(committed)
	case err == nil:
		s.final = io.EOF
		s.state.Store(ended)
	default:
		s.current().release() // Do may have stopped before it took the first attempt
		s.final = s.result(tr, err)
		s.state.Store(ended)
	}
	returned = true
	return true
}

// attempt is Do's op for a server-streaming stream: the attempt opened by
// NewStream the first time, a new one after.
func (s *stream) attempt(loop context.Context, wait func(*attempt) error) error {
	a := s.cur
	if s.started {
		var err error
		if a, err = s.reopen(loop); err != nil {
			return err
		}
	}
	if a.cs == nil {
		s.started = true
		return a.err
	}
	if !s.started {
		s.bound(a, loop)
	}
	s.started = true
	err := wait(a)
	switch {
	case err == nil:
		s.clearHold()
		if !a.stopTimer() {
			// Time ran out just as the answer came: the attempt's ctx has
			// ended, so the stream is unusable. It counts as timed out.
			a.release()
			return newTimeoutError(errLate)
		}
		return nil
	case err == io.EOF:
		a.release()
		s.eof = true
		return nil
	}
	s.trailer = a.cs.Trailer()
	// A response header before the error committed the stream (A6).
	md, _ := a.cs.Header()
	s.committed = md != nil
	a.release()
	return a.check(err)
}

// bound makes the attempt that NewStream opened, before the retry loop
// began, end by the loop's MaxElapsed deadline too, until it commits: the
// attempts after it get that deadline when they open (see limit).
func (s *stream) bound(a *attempt, loop context.Context) {
	end, ok := loop.Deadline()
	if !ok || a.cancel == nil {
		return // no MaxElapsed; without one, open gave the attempt no ctx of its own
	}
	if own, mine := s.ctx.Deadline(); mine && own.Equal(end) {
		return // the caller's deadline: the attempt's ctx has it
	}
	cancel := a.cancel
	if left := clocks.Until(s.clk, end); left > 0 {
		a.bound = clocks.AfterFunc(s.clk, left, func() { cancel(errAttemptTimeout) })
	} else {
		cancel(errAttemptTimeout)
	}
}

// reopen opens a new attempt, makes it the current one, and sends it what
// the caller has sent so far.
func (s *stream) reopen(loop context.Context) (*attempt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	a := s.open(loop)
	s.cur = a
	if a.cs == nil {
		return a, nil
	}
	if s.hasMsg {
		// io.EOF means the stream has ended: its status comes from wait.
		if err := a.cs.SendMsg(s.msg); err != nil && err != io.EOF {
			a.release()
			return nil, err
		}
	}
	if s.closed {
		_ = a.cs.CloseSend() // grpc's CloseSend errors show in RecvMsg
	}
	return a, nil
}
