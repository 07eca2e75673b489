package shed

import (
	"net/http"
	"strconv"
	"time"
)

// Handler returns a handler that admits each request through l before
// next serves it. A shed request never reaches next: it gets 503 Service
// Unavailable, a Retry-After in whole seconds (at least 1, at most
// MaxRetryAfter, jittered per response; see [RetryAfterOf]), the
// [LoadShedHeader] and an RFC 9457 problem+json body. A request whose client went away while it
// waited gets no answer.
//
// The work's Outcome is read from its response: 429, 503 and 504 are
// [Overloaded] (the handler's own dependency refused or timed out), a
// request whose ctx ended before next returned is [Ignored], anything
// else a [Success] whose latency is a sample. The ResponseWriter next gets
// keeps http.ResponseController working (it has Unwrap) and is an
// http.Flusher.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start, err := l.acquire(r.Context(), l.opts.Priority(r))
		if err != nil {
			if ra := RetryAfterOf(err); ra > 0 {
				writeShed(w, ra)
			}
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() { l.release(start, sw.outcome(r)) }()
		next.ServeHTTP(sw, r)
	})
}

// writeShed writes the answer to a shed request.
func writeShed(w http.ResponseWriter, ra time.Duration) {
	secs := strconv.Itoa(int(ra / time.Second))
	h := w.Header()
	h["Retry-After"] = []string{secs}
	h["Content-Type"] = []string{"application/problem+json"}
	h["Cache-Control"] = []string{"no-store"}
	h[LoadShedHeader] = []string{"request"}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(`{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The server is overloaded; retry after ` + secs + ` seconds."}`))
}

// statusWriter remembers the status next wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the response, if the ResponseWriter underneath can.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap gives http.ResponseController the ResponseWriter underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) outcome(r *http.Request) Outcome {
	switch {
	case r.Context().Err() != nil:
		return Ignored
	case w.status == http.StatusTooManyRequests, w.status == http.StatusServiceUnavailable, w.status == http.StatusGatewayTimeout:
		return Overloaded
	}
	return Success
}
