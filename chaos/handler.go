package chaos

import (
	"net/http"
)

// Handler returns a handler that injects faults into the requests it
// passes to next, on the server side: it waits out the drawn Latency
// (and, if the client has gone meanwhile, writes nothing); then a Status is
// written, with the Fault's Header and a short text body, without calling
// next; an Err closes the connection without calling next; Drop calls
// next, throws away everything it writes and closes the connection, so
// that the client sees a transport error for a request the server carried
// out (see [Fault]). While no switch of the faults is on, it adds one
// atomic load to each request and allocates nothing; when no fault has a
// Switch (or none is valid), it returns next itself.
//
// The connection is closed by hijacking it (HTTP/1), or else by the
// panic net/http provides for that, http.ErrAbortHandler (HTTP/2 resets
// the stream): put Handler outside any middleware that recovers panics.
func Handler(next http.Handler, faults ...Fault) http.Handler {
	in := NewInjector(faults...)
	if in.first == nil {
		return next // no fault can ever fire: nothing to add
	}
	return &handler{next: next, in: in}
}

type handler struct {
	next http.Handler
	in   *Injector
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.in.Active() {
		h.next.ServeHTTP(w, r)
		return
	}
	h.inject(w, r)
}

// inject is ServeHTTP with a switch on, apart so that the fast path keeps
// a small frame.
func (h *handler) inject(w http.ResponseWriter, r *http.Request) {
	d := h.in.Decide(r)
	if d.Wait(r.Context()) != nil {
		return // the client gave up: nobody reads an answer
	}
	switch {
	case d.Drop:
		h.next.ServeHTTP(&lostWriter{header: http.Header{}}, r)
		hangUp(w)
	case d.Err != nil:
		hangUp(w)
	case d.Status != 0:
		for k, v := range d.Header {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.WriteHeader(d.Status)
		_, _ = w.Write([]byte("chaos: injected " + d.Fault + "\n"))
	default:
		h.next.ServeHTTP(w, r)
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// lostWriter takes a response that will never be sent, keeping none of
// its body.
type lostWriter struct {
	header http.Header
}

func (l *lostWriter) Header() http.Header         { return l.header }
func (l *lostWriter) Write(b []byte) (int, error) { return len(b), nil }
func (l *lostWriter) WriteHeader(int)             {}
