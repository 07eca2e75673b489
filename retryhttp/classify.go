package retryhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"syscall"

	"github.com/stormguard/retry"
)

// DefaultClassifier is the Classifier of a Transport whose Policy has none.
// It retries:
//   - 408 Request Timeout, 429 Too Many Requests, 502 Bad Gateway,
//     503 Service Unavailable and 504 Gateway Timeout;
//   - 409 Conflict with a Retry-After header: an idempotency key whose first
//     request is still running (see package idempotency);
//   - an attempt that timed out (AttemptTimeout or MaxElapsed ran out while
//     the caller's ctx was alive: a timeout whatever error Base returned
//     for it, context.Canceled included), and network timeouts;
//   - a connection refused, reset, aborted or closed before or during the
//     response head (EOF, or a head cut short and so malformed), a broken
//     pipe, an unreachable host or network, a DNS lookup that timed out or
//     failed temporarily, and a keep-alive connection that the server
//     closed as the request went out.
//
// A response that [Transport.CheckResponse] failed, whatever its status, is
// retried unless the error it returned is marked with retry.Permanent (or
// is a cancellation); its Reason is the status and ", CheckResponse
// failed".
//
// It does not retry any other status (500 and 501 included: wrap it to opt
// in, see the example), a TLS certificate error, a DNS name that does not
// exist, a cancellation, or an error it does not know to be transient, such
// as a malformed request. It decides by status code and by error type with
// errors.Is and errors.As, never by error text (but for two errors of
// net/http that have neither type nor exported value; see the code).
//
// Whatever it says, the Transport retries only a request that is safe to
// repeat, and waits at least a response's Retry-After.
//
// The Reason it gives is short and fixed, "503 Service Unavailable" or
// "connection refused", so that it is safe to log.
func DefaultClassifier(_ context.Context, a retry.Attempt) retry.Decision {
	if se, ok := a.Err.(*StatusError); ok { // as the Transport hands it over
		return classifyStatus(se)
	}
	if se := asStatusError(a.Err); se != nil { // wrapped by a caller's Classifier
		return classifyStatus(se)
	}
	return classifyError(a.Err)
}

// asStatusError finds a *StatusError in err's tree. It is a function of its
// own so that the variable errors.As needs escapes only on this path.
func asStatusError(err error) *StatusError {
	var se *StatusError
	if errors.As(err, &se) {
		return se
	}
	return nil
}

func classifyStatus(se *StatusError) retry.Decision {
	reason := statusText(se.StatusCode)
	if se.Err != nil {
		// CheckResponse failed the response: a retryable failure unless its
		// error is marked retry.Permanent, whatever the status.
		d := retry.DefaultClassifier(context.Background(), retry.Attempt{Err: se.Err})
		return retry.Decision{Retry: d.Retry, RetryAfter: d.RetryAfter, Reason: reason + ", CheckResponse failed"}
	}
	switch se.StatusCode {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retry.Decision{Retry: true, Reason: reason}
	case http.StatusConflict:
		return retry.Decision{Retry: se.Header.Get("Retry-After") != "", Reason: reason}
	}
	return retry.Decision{Reason: reason}
}

func classifyError(err error) retry.Decision {
	yes := func(reason string) retry.Decision { return retry.Decision{Retry: true, Reason: reason} }
	no := func(reason string) retry.Decision { return retry.Decision{Reason: reason} }
	var protocol textproto.ProtocolError
	switch {
	case errors.Is(err, errAttemptTimeout):
		// First: the attempt's own timer ended it, whatever else Base said.
		return yes("attempt timed out")
	case errors.Is(err, context.Canceled):
		return no("canceled")
	case errors.Is(err, ErrHostHeld):
		return no("host held back (Retry-After)")
	case isCertificateError(err):
		return no("TLS certificate error")
	case errors.Is(err, context.DeadlineExceeded):
		return yes("attempt timed out")
	case errors.Is(err, syscall.ECONNREFUSED):
		return yes("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED):
		return yes("connection reset")
	case errors.Is(err, syscall.EPIPE):
		return yes("broken pipe")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return yes("connection closed before response")
	case errors.As(err, &protocol), isBrokenHead(err):
		return yes("response cut short")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.ENETDOWN):
		return yes("network unreachable")
	case isServerClosedIdle(err):
		return yes("server closed idle connection")
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsTimeout || dnsErr.IsTemporary {
			return yes("DNS lookup failed")
		}
		return no("DNS lookup failed")
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return yes("timeout")
	}
	return no("error")
}

// isCertificateError reports whether err says that the server's certificate
// was not accepted: retrying cannot change the certificate.
func isCertificateError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) ||
		errors.As(err, &hostname) || errors.As(err, &invalid)
}

// Two errors of net/http have no type or exported value to match, and are
// matched by their text, the only places where this package reads one.
const (
	// serverClosedIdle is errServerClosedIdle: the server closed a
	// keep-alive connection just as a request went out on it. net/http
	// retries that itself, but only for the methods of
	// Request.isReplayable, so a PUT or DELETE can surface it.
	serverClosedIdle = "http: server closed idle connection"

	// brokenHead prefixes what net/http returns when a connection breaks
	// after the request went out and before a whole response head came
	// back. A cut inside the status line yields "malformed HTTP response"
	// or "malformed HTTP status code", plain error strings; a cut at other
	// bytes yields io.ErrUnexpectedEOF or a textproto.ProtocolError. Where
	// the connection died must not decide whether the request is retried,
	// so all of them are.
	brokenHead = "net/http: HTTP/1.x transport connection broken: "
)

func isServerClosedIdle(err error) bool {
	return anyText(err, func(s string) bool { return s == serverClosedIdle })
}

func isBrokenHead(err error) bool {
	return anyText(err, func(s string) bool { return strings.HasPrefix(s, brokenHead) })
}

// anyText reports whether the text of err, or of an error it wraps, matches.
func anyText(err error, match func(string) bool) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if match(err.Error()) {
			return true
		}
	}
	return false
}

// neverSent reports whether err proves that the request never reached a
// server: the dial failed (connection refused, no route, a DNS lookup), so
// nothing was written, and nothing can run twice if it is sent again.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// statusText is the Reason for a status: "503 Service Unavailable". It
// takes the text from net/http, not from the server, which could send
// anything.
func statusText(code int) string {
	if code >= 0 && code < len(statusTexts) && statusTexts[code] != "" {
		return statusTexts[code]
	}
	return formatStatus(code)
}

// statusTexts holds statusText for every code that net/http names, made
// once: every response is judged, and its Reason should cost nothing.
var statusTexts = func() (texts [600]string) {
	for code := range texts {
		if http.StatusText(code) != "" {
			texts[code] = formatStatus(code)
		}
	}
	return texts
}()

func formatStatus(code int) string {
	if text := http.StatusText(code); text != "" {
		return strconv.Itoa(code) + " " + text
	}
	return strconv.Itoa(code)
}
