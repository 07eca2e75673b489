package idempotency

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// recorder is the ResponseWriter the handler gets: it holds the response
// until the middleware has saved it, so that a response is never sent
// before it can be replayed. It supports none of http.ResponseController's
// features (no Flush, Hijack, deadlines or full duplex: it has no Unwrap,
// so each answers http.ErrNotSupported): a response is sent only once it
// is saved, so it cannot be streamed as it is written (but for a body past
// MaxResponseBytes, see overflow), and the request body was read in full
// before the handler ran.
type recorder struct {
	w       http.ResponseWriter // the client's
	header  http.Header         // what the handler sets
	status  int                 // 0 until the handler writes a status
	saved   http.Header         // header when the status was written: what is sent
	trailer http.Header         // the trailers, once the handler has returned
	body    bytes.Buffer
	limit   int64
	mode    recorderMode

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
// 200 and the header as it is; and gathers the trailers the handler set.
func (r *recorder) finish() {
	if r.status == 0 {
		r.status = http.StatusOK
		r.saved, r.header = r.header, nil
	}
	live := r.header // the map the handler changed after WriteHeader
	if live == nil {
		live = r.saved
	}
	r.trailer = trailers(r.saved, live)
}

// trailers returns the trailers of a response as net/http would send them
// (its finalTrailers): the values, at the end, of the names that the
// Trailer header declared when the status was written, and every name set
// with http.TrailerPrefix. It returns nil for none.
func trailers(saved, live http.Header) http.Header {
	var t http.Header
	add := func(k string, vs []string) {
		if len(vs) == 0 || notSaved(k) {
			return
		}
		if t == nil {
			t = make(http.Header)
		}
		t[k] = append(t[k], vs...)
	}
	for k, vs := range live {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			add(http.CanonicalHeaderKey(name), vs)
		}
	}
	for _, v := range saved["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = http.CanonicalHeaderKey(strings.TrimSpace(name)); name != "" && t[name] == nil {
				add(name, live[name])
			}
		}
	}
	return t
}

// send sends what the recorder holds to the client: all of the response if
// whole, or what is held so far of one that streams on.
func (r *recorder) send(whole bool) {
	send(r.w, r.status, r.saved, r.body.Bytes(), r.trailer, whole)
}

// send writes a response: header, status, body and trailers. The header
// map of w keeps what outer handlers set; the response's own fields
// replace theirs. A header set with http.TrailerPrefix is not a header,
// and its value is in trailer: it is left out. Trailers go out with
// http.TrailerPrefix once the body is written, which net/http sends as
// trailers whether or not the Trailer header declared them (if the
// response is chunked: with a Content-Length, net/http drops them, as it
// did for the first response).
//
// When body is the whole body (whole) and longer than the 2 KiB that
// net/http buffers, send sets Content-Length, unless the response has
// trailers or sets its own framing: net/http finds the length by itself
// only for a body that fits that buffer, and chunks a larger one, which
// costs a chunk header, a last chunk and a second write on the wire. A
// saved response's length is known, so a replay, or a first response that
// was held until saved, is never chunked. (A shorter body gets the same
// Content-Length from net/http.)
func send(w http.ResponseWriter, status int, header http.Header, body []byte, trailer http.Header, whole bool) {
	dst := w.Header()
	for k, v := range header {
		if !strings.HasPrefix(k, http.TrailerPrefix) {
			dst[k] = v
		}
	}
	if whole && len(body) > chunkingBuffer && len(trailer) == 0 && bodyAllowed(status) &&
		dst["Content-Length"] == nil && dst["Transfer-Encoding"] == nil && dst["Trailer"] == nil {
		dst["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	if len(body) > 0 {
		_, _ = w.Write(body) // the client may be gone; the result is saved
	}
	for k, v := range trailer {
		if declared(header, k) {
			dst[k] = v // net/http takes a declared trailer's value from its name
		} else {
			dst[http.TrailerPrefix+k] = v
		}
	}
}

// chunkingBuffer is how much of a body net/http's server buffers before it
// sends the header: past it, a body without a Content-Length is chunked.
const chunkingBuffer = 2048

// declared reports whether header's Trailer field names the trailer name.
func declared(header http.Header, name string) bool {
	for _, v := range header["Trailer"] {
		for n := range strings.SplitSeq(v, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(n)) == name {
				return true
			}
		}
	}
	return false
}

// bodyAllowed reports whether a response with status may have a body
// (RFC 9110 §6.4.1).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
