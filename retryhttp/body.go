package retryhttp

import (
	"io"
	"net/http"
)

// drainLimit bounds how much of a retried response's body is read so that
// its connection can be reused; a longer body is cut off, and its connection
// closed, which costs less than reading it.
const drainLimit = 64 << 10

// drain reads up to drainLimit of body and closes it.
func drain(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainLimit)
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
