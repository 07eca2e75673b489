package chaos

import (
	"fmt"
	"io"
	"net/http"
)

// Transport returns a RoundTripper that injects faults into the requests
// it sends through base (nil means http.DefaultTransport), on the client
// side: before sending, it waits out the drawn Latency; then a Status is
// returned as a response that never reached the server, with the Fault's
// Header and an empty body; an Err is returned as the error of the round
// trip, without reaching the server; Drop sends the request and throws its
// response away (see [Fault]). While no switch of the faults is on, it
// adds one atomic load to each request and allocates nothing; when no
// fault has a Switch (or none is valid), it returns base itself.
//
// Put it below a retrying Transport (retryhttp.Transport.Base) to see
// what your retry rules make of the faults: each attempt is drawn for.
func Transport(base http.RoundTripper, faults ...Fault) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	in := NewInjector(faults...)
	if in.first == nil {
		return base // no fault can ever fire: nothing to add
	}
	return &transport{base: base, in: in}
}

type transport struct {
	base http.RoundTripper
	in   *Injector
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.in.Active() {
		return t.base.RoundTrip(req)
	}
	return t.inject(req)
}

// inject is RoundTrip with a switch on, apart so that the fast path keeps
// a small frame.
func (t *transport) inject(req *http.Request) (*http.Response, error) {
	d := t.in.Decide(req)
	if err := d.Wait(req.Context()); err != nil {
		closeBody(req)
		return nil, err
	}
	switch {
	case d.Drop:
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		// Drain a little, bounded, as a lost connection would not, so that
		// the connection can be reused by the next attempt.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, &injectedError{fault: d.Fault, err: io.ErrUnexpectedEOF}
	case d.Err != nil:
		closeBody(req)
		return nil, d.Err
	case d.Status != 0:
		closeBody(req)
		return injectedResponse(req, d), nil
	}
	return t.base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the base, as
// http.Client.CloseIdleConnections expects of a RoundTripper.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

func injectedResponse(req *http.Request, d Decision) *http.Response {
	h := d.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		Status:     fmt.Sprintf("%d %s", d.Status, http.StatusText(d.Status)),
		StatusCode: d.Status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Body:       http.NoBody,
		Request:    req,
	}
}
