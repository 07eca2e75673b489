package retrytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// HandlerTransport returns an http.RoundTripper that serves each request
// with h in the same process, through no socket: the handler runs on a
// goroutine of its own and streams its response to the caller through a
// pipe, as a server on loopback would, and sees the request's ctx end when
// the caller gives up.
//
// It is for tests inside testing/synctest, where a loopback server cannot
// be used: a goroutine that waits on the network is not "durably blocked"
// in synctest's terms, so the bubble never sees the client idle and its
// fake time stands still, and the test deadlocks. Outside synctest, an
// httptest.Server is the closer match to production.
//
// The response has the status, header and body that h wrote, and a
// ContentLength from its Content-Length header (-1 without one). A panic in
// h reaches the caller as an error. Hijacking is not supported.
//
// To test what a network does to requests, see [FaultyHandlerTransport].
func HandlerTransport(h http.Handler) http.RoundTripper {
	return handlerTransport{h: h}
}

// Fault is what the network between a client and the handler of a
// [FaultyHandlerTransport] does to one request.
type Fault uint8

const (
	// Deliver is no fault: the request reaches the handler and its answer
	// reaches the caller, as with [HandlerTransport].
	Deliver Fault = iota

	// Refuse refuses the connection: the handler does not run, and the
	// caller gets the error of a dial that was refused, a *net.OpError
	// whose Op is "dial" that matches syscall.ECONNREFUSED. Nothing reached
	// the server, so any request may be sent again.
	Refuse

	// DropAnswer runs the handler to its end, then drops the connection
	// before the answer: whatever the handler did is done and whatever it
	// wrote is lost, and the caller gets an error that matches io.EOF, as
	// from a server or proxy that closed the connection. It is the fault
	// that makes a retry run a handler twice unless the server recognizes
	// the retry, by an idempotency key for instance.
	DropAnswer
)

// FaultyHandlerTransport is [HandlerTransport] behind a network that fails:
// for each request, fault says what becomes of it (a nil fault delivers
// every one). It is called once per RoundTrip, on the caller's goroutine,
// with the request as the caller sent it (its headers carry the
// idempotency key and attempt number of a retrying client), so it can
// follow a script, draw from a seeded source, or pick requests by header;
// it may be called from many goroutines at once.
//
// With it a test shows that a retried write has its effect once without a
// socket, inside testing/synctest too: wrap the handler in the server's
// idempotency middleware, drop the answer of the first attempt, and count
// the handler's effects.
func FaultyHandlerTransport(h http.Handler, fault func(*http.Request) Fault) http.RoundTripper {
	return handlerTransport{h: h, fault: fault}
}

type handlerTransport struct {
	h     http.Handler
	fault func(*http.Request) Fault
}

var (
	errHandlerPanicked = errors.New("retrytest: handler panicked")
	errAnswerDropped   = fmt.Errorf("retrytest: connection dropped after the handler ran, before its answer: %w", io.EOF)
	errRefused         = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
)

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fault := Deliver
	if t.fault != nil {
		fault = t.fault(req)
	}
	if fault == Refuse {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the request body, sent or not
		}
		return nil, errRefused
	}
	ctx := req.Context()
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "192.0.2.1:4321" // TEST-NET-1: no socket, but handlers expect an address
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	if fault == DropAnswer {
		return t.drop(req, sreq)
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{header: make(http.Header), pipe: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if recover() != nil {
				w.fail(errHandlerPanicked)
			}
			w.finish()
			if req.Body != nil {
				req.Body.Close() // a RoundTripper closes the request body
			}
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		pr.CloseWithError(context.Cause(ctx))
		return nil, ctx.Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		ContentLength: -1,
		Request:       req,
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	body := &pipeBody{r: pr}
	body.stop = context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	resp.Body = body
	return resp, nil
}

// drop runs the handler to its end on a ResponseWriter that discards what
// it writes, then fails as a dropped connection does. A caller that gives
// up first gets its ctx's error; the handler runs on, as a server's would
// until it noticed.
func (t handlerTransport) drop(req, sreq *http.Request) (*http.Response, error) {
	done := make(chan bool, 1) // true if the handler panicked
	go func() {
		panicked := true
		defer func() {
			if panicked {
				recover()
			}
			if req.Body != nil {
				req.Body.Close()
			}
			done <- panicked
		}()
		t.h.ServeHTTP(&lostWriter{header: make(http.Header)}, sreq)
		panicked = false
	}()
	select {
	case panicked := <-done:
		if panicked {
			return nil, errHandlerPanicked
		}
		return nil, errAnswerDropped
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// lostWriter is the ResponseWriter of a handler whose answer is dropped.
type lostWriter struct{ header http.Header }

func (w *lostWriter) Header() http.Header         { return w.header }
func (w *lostWriter) WriteHeader(int)             {}
func (w *lostWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *lostWriter) Flush()                      {}

// pipeWriter is the handler's http.ResponseWriter: the header goes to the
// caller once, at WriteHeader, the body through the pipe.
type pipeWriter struct {
	header http.Header
	pipe   *io.PipeWriter

	once  sync.Once
	ready chan struct{} // closed when the header is sent, or the handler failed
	code  int
	sent  http.Header
	err   error
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pipe.Write(p)
}

// Flush implements http.Flusher: the pipe has no buffer to flush.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }

// fail reports err to the caller if the header is not sent yet, and to the
// body reader otherwise.
func (w *pipeWriter) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.ready)
	})
	w.pipe.CloseWithError(err)
}

// finish ends the response when the handler returns.
func (w *pipeWriter) finish() {
	w.WriteHeader(http.StatusOK)
	w.pipe.Close()
}

// pipeBody is the response body: reading it reads what the handler writes.
type pipeBody struct {
	r    *io.PipeReader
	stop func() bool
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *pipeBody) Close() error {
	b.stop()
	return b.r.CloseWithError(errBodyClosed)
}

var errBodyClosed = errors.New("retrytest: response body closed")
