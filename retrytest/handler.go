package retrytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
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
func HandlerTransport(h http.Handler) http.RoundTripper {
	return handlerTransport{h}
}

type handlerTransport struct{ h http.Handler }

var errHandlerPanicked = errors.New("retrytest: handler panicked")

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
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
