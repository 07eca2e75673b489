package retrygrpc

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/stormguard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// openOnce opens a client-streaming or bidi stream: the retry loop retries
// the opening only, when nothing has been sent.
func (s *stream) openOnce() (grpc.ClientStream, error) {
	tr, err := retry.Do(s.ctx, func(loop context.Context) error {
		s.n++
		a := s.open(loop)
		if a.cs == nil {
			return a.err
		}
		// Open: from here on the stream is the caller's, bounded by the
		// caller's ctx alone.
		if !a.stopTimer() {
			a.release()
			return newTimeoutError(errLate)
		}
		s.cur = a
		s.clearHold()
		return nil
	}, s.policy)
	storeTrace(s.ctx, tr)
	if err != nil {
		return nil, s.result(tr, err)
	}
	return &openStream{ClientStream: s.cur.cs, s: s}, nil
}

// openStream is an open client-streaming or bidi stream: the caller's
// calls go to it as they are; it explains the errors it would have retried,
// and releases the attempt when the stream ends.
type openStream struct {
	grpc.ClientStream
	s        *stream
	answered atomic.Bool // a header or a message came: the stream has committed
}

func (o *openStream) SendMsg(m any) error {
	err := o.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF { // io.EOF: the status comes from RecvMsg
		o.s.cur.release()
		return o.explain(err)
	}
	return err
}

func (o *openStream) RecvMsg(m any) error {
	err := o.ClientStream.RecvMsg(m)
	switch {
	case err == nil:
		o.answered.Store(true)
		return nil
	case err == io.EOF:
		o.s.cur.release()
		return err
	}
	o.s.cur.release()
	return o.explain(err)
}

func (o *openStream) Header() (metadata.MD, error) {
	md, err := o.ClientStream.Header()
	if md != nil {
		o.answered.Store(true)
	}
	if err != nil && err != io.EOF {
		o.s.cur.release()
		return md, o.explain(err)
	}
	return md, err
}

// explain marks err with ErrNotReplayed when the interceptor would have
// retried it, had the stream been replayable; the status stays as it is.
func (o *openStream) explain(err error) error {
	s := o.s
	if o.answered.Load() || !s.idempotent || s.cfg.grpcRetries(s.cc, s.method) {
		return err
	}
	if d := s.judge(s.ctx, retry.Attempt{Number: 1, Err: err}); !d.Retry {
		return err
	}
	return &callError{st: status.Convert(err), err: &notReplayedError{err}}
}
