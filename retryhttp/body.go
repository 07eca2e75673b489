package retryhttp

import (
	"io"
	"net/http"
	"time"
)

// Bounds on draining a response that is not returned, so that its
// connection can be reused. A body longer than drainBytes, or of unknown
// length, is closed unread: that costs the connection, which is cheaper than
// reading what a server may stretch without end. A known short body is read
// for at most drainTimeout, so that a server that trickles it cannot hold
// the request.
const (
	drainBytes   = 64 << 10
	drainTimeout = 250 * time.Millisecond
)

// drain reads resp's body, if it is short, for at most limit, and closes
// it. The limit is real time, whatever the policy's clock: it bounds real
// reading.
func drain(resp *http.Response, limit time.Duration) {
	body := resp.Body
	if body == nil {
		return
	}
	if resp.ContentLength < 0 || resp.ContentLength > drainBytes || limit <= 0 {
		body.Close()
		return
	}
	stop := time.AfterFunc(limit, func() { body.Close() }) // Close unblocks a Read in net/http's bodies
	_, _ = io.CopyN(io.Discard, body, resp.ContentLength+1)
	stop.Stop()
	body.Close()
}

// releaseOnClose returns body wrapped so that closing it also releases a,
// which ends the attempt's ctx. A body with nothing to read is released now.
// The body of a 101 Switching Protocols response is writable, and stays so.
func releaseOnClose(body io.ReadCloser, a *attempt) io.ReadCloser {
	if body == nil || body == http.NoBody {
		a.release()
		return body
	}
	b := &releasingBody{ReadCloser: body, a: a}
	if rw, ok := body.(io.ReadWriteCloser); ok {
		return &releasingRWBody{releasingBody: b, w: rw}
	}
	return b
}

type releasingBody struct {
	io.ReadCloser
	a *attempt // its release is safe to call more than once, and concurrently
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.a.release()
	return err
}

type releasingRWBody struct {
	*releasingBody
	w io.Writer
}

func (b *releasingRWBody) Write(p []byte) (int, error) { return b.w.Write(p) }
