package retryhttp

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Bounds on the start of a body that [Transport.CheckResponse] sees: what
// an error object or a status field needs, and no more than a tenth of a
// second of waiting for it, since every response is checked.
const (
	peekBytes   = 4 << 10
	peekTimeout = 100 * time.Millisecond
)

// peek reads the start of resp's body, up to peekBytes, its end, or limit
// (real time), whichever comes first, and returns it. resp's body then reads
// from its first byte: what peek read, then the rest. A read still under
// way when limit passes goes on in the background, so that the body is
// never cut; closing the body ends it. A body with nothing to read, or the
// writable body of a 101 Switching Protocols, is not peeked.
func peek(resp *http.Response, limit time.Duration) []byte {
	body := resp.Body
	n := int64(peekBytes)
	if resp.ContentLength >= 0 {
		n = min(n, resp.ContentLength)
	}
	if _, writable := body.(io.Writer); body == nil || body == http.NoBody || writable || n == 0 || limit <= 0 {
		return nil
	}
	p := &peekedBody{rc: body, buf: make([]byte, n), more: make(chan struct{}, 1), done: make(chan struct{})}
	go p.fill()
	timer := time.NewTimer(limit)
	select {
	case <-p.done:
	case <-timer.C:
	}
	timer.Stop()
	resp.Body = p
	f := p.filled.Load()
	return p.buf[:f:f]
}

// peekedBody is a body whose start fill reads ahead into buf. fill writes
// only past filled, and Read and peek read only up to it, so they need no
// lock.
type peekedBody struct {
	rc     io.ReadCloser
	buf    []byte
	filled atomic.Int64
	err    error         // fill's last error, if any; set before done is closed
	more   chan struct{} // a signal that filled grew
	done   chan struct{} // closed when fill has returned
	off    int64         // what Read has returned of buf
}

// fill reads rc into buf until buf is full or rc fails (io.EOF included).
func (p *peekedBody) fill() {
	defer close(p.done)
	for n := int64(0); n < int64(len(p.buf)); {
		m, err := p.rc.Read(p.buf[n:])
		n += int64(m)
		p.filled.Store(n)
		select {
		case p.more <- struct{}{}:
		default:
		}
		if err != nil {
			p.err = err
			return
		}
	}
}

// Read returns what fill has read and Read has not, as soon as there is
// any, so that a stream is not held back until buf is full; then the rest
// of rc.
func (p *peekedBody) Read(b []byte) (int, error) {
	for {
		if f := p.filled.Load(); p.off < f {
			n := copy(b, p.buf[p.off:f])
			p.off += int64(n)
			return n, nil
		}
		select {
		case <-p.done:
			if p.off < p.filled.Load() {
				continue
			}
			if p.err != nil {
				return 0, p.err
			}
			return p.rc.Read(b)
		case <-p.more:
		}
	}
}

// Close closes rc, which ends a read of fill's still under way.
func (p *peekedBody) Close() error { return p.rc.Close() }
