package idempotency

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problem is an RFC 9457 problem details object. Its type is about:blank,
// so its title is the status's own phrase (RFC 9457 §4.2.1), and the detail
// says what went wrong in this occurrence.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// retryAfterSeconds is the Retry-After of a 409 and a 503. A second is
// the smallest the header can say; a client's jittered backoff comes on
// top of it.
const retryAfterSeconds = 1

// writeProblem answers with status and an application/problem+json body,
// and a Retry-After when retryAfter is set. The header map is the one the
// outer handlers left, so their headers (a request id, CORS) stay.
func writeProblem(w http.ResponseWriter, status int, detail string, retryAfter bool) {
	body, _ := json.Marshal(problem{ // cannot fail: strings and an int
		Type:   "about:blank",
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
	})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if retryAfter {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing more to do
}
