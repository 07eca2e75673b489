package idempotency

import (
	"bytes"
	"fmt"
	"net/http"
)

// recorder is the ResponseWriter the handler gets: it holds the response
// until the middleware has saved it, so that a response is never sent
// before it can be replayed. It supports no Flush or Hijack: a response is
// sent only once it is saved, so it cannot be streamed as it is written
// (but for a body past MaxResponseBytes, see overflow).
type recorder struct {
	w      http.ResponseWriter // the client's
	header http.Header         // what the handler sets
	status int                 // 0 until the handler writes a status
	saved  http.Header         // header when the status was written: what is sent
	body   bytes.Buffer
	limit  int64
	mode   recorderMode

	// overflow is called once, when the body would pass limit. It settles
	// the claim and sets mode to streaming, having sent what is held, or
	// to discarding; an error it returns goes back to the handler's Write.
	overflow interface{ overflow() error }
}

type recorderMode uint8

const (
	buffering  recorderMode = iota
	streaming               // the claim is settled; writes go to the client
	discarding              // the lease was lost; nothing goes to the client
)

func (r *recorder) Header() http.Header {
	switch {
	case r.mode == streaming:
		return r.w.Header()
	case r.header == nil:
		// After WriteHeader: a copy, so that changes to it are not sent,
		// as in net/http. Made only if a handler asks, which few do.
		r.header = r.saved.Clone()
		if r.header == nil {
			r.header = make(http.Header)
		}
	}
	return r.header
}

// WriteHeader records the status and the header as they are now, as
// net/http does: later changes to the header map do not count. The map
// itself is kept, not copied; Header hands out a copy from then on. A code out
// of range panics, as it does in net/http; 1xx responses are dropped,
// since nothing can be sent before the response is saved.
func (r *recorder) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	switch {
	case r.mode == streaming:
		r.w.WriteHeader(code)
	case r.status != 0, code < 200:
	default:
		r.status = code
		r.saved, r.header = r.header, nil
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	switch r.mode {
	case streaming:
		return r.w.Write(p)
	case discarding:
		return 0, ErrLeaseLost
	}
	if !bodyAllowed(r.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if int64(r.body.Len())+int64(len(p)) <= r.limit {
		return r.body.Write(p)
	}
	if err := r.overflow.overflow(); err != nil {
		return 0, err
	}
	return r.Write(p)
}

// finish fills in what net/http would for a handler that wrote nothing:
// 200 and the header as it is.
func (r *recorder) finish() {
	if r.status == 0 {
		r.status = http.StatusOK
		r.saved, r.header = r.header, nil
	}
}

// send sends what the recorder holds to the client.
func (r *recorder) send() {
	send(r.w, r.status, r.saved, r.body.Bytes())
}

// send writes a response: header, status and body. The header map of w
// keeps what outer handlers set; the response's own fields replace theirs.
func send(w http.ResponseWriter, status int, header http.Header, body []byte) {
	dst := w.Header()
	for k, v := range header {
		dst[k] = v
	}
	w.WriteHeader(status)
	if len(body) > 0 {
		_, _ = w.Write(body) // the client may be gone; the result is saved
	}
}

// bodyAllowed reports whether a response with status may have a body
// (RFC 9110 §6.4.1).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
