package retryhttp

import (
	"io"
	"net/http"
	"time"
)

// Bounds on draining a response that is not returned, so that its
// connection can be reused. A body is read for at most drainBytes and at
// most drainTimeout, whether its length is known or not (chunked): a server
// that trickles it cannot hold the request, nor one that stretches it
// without end, and a body that does not end within both bounds is closed,
// which costs its connection. A body known to be longer than drainBytes is
// closed unread.
const (
	drainBytes   = 64 << 10
	drainTimeout = 250 * time.Millisecond
)

// drain reads resp's body, up to its end if that comes within drainBytes
// and limit, and closes it. The limit is real time, whatever the policy's
// clock: it bounds real reading.
func drain(resp *http.Response, limit time.Duration) {
	body := resp.Body
	if body == nil {
		return
	}
	if resp.ContentLength > drainBytes || limit <= 0 {
		body.Close()
		return
	}
	// One byte past the end, so that the body reports it: net/http
	// reuses the connection only once its body has returned io.EOF.
	n := int64(drainBytes) + 1
	if resp.ContentLength >= 0 {
		n = resp.ContentLength + 1
	}
	stop := time.AfterFunc(limit, func() { body.Close() }) // Close unblocks a Read in net/http's bodies
	_, _ = io.CopyN(io.Discard, body, n)
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
