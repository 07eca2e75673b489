package retryhttp_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
)

func TestDefaultClassifierErrors(t *testing.T) {
	t.Parallel()
	opErr := func(op string, err error) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}
	}
	tests := []struct {
		name   string
		err    error
		retry  bool
		reason string
	}{
		{"refused", opErr("dial", syscall.ECONNREFUSED), true, "connection refused"},
		{"reset", fmt.Errorf("read: %w", opErr("read", syscall.ECONNRESET)), true, "connection reset"},
		{"aborted", opErr("read", syscall.ECONNABORTED), true, "connection reset"},
		{"broken pipe", opErr("write", syscall.EPIPE), true, "broken pipe"},
		{"EOF", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", io.EOF), true, "connection closed before response"},
		{"unexpected EOF", io.ErrUnexpectedEOF, true, "connection closed before response"},
		{"host unreachable", opErr("dial", syscall.EHOSTUNREACH), true, "network unreachable"},
		{"network unreachable", opErr("dial", syscall.ENETUNREACH), true, "network unreachable"},
		{"dial timeout", opErr("dial", syscall.ETIMEDOUT), true, "timeout"},
		{"attempt timed out", context.DeadlineExceeded, true, "attempt timed out"},
		{"server closed idle", errors.New("http: server closed idle connection"), true, "server closed idle connection"},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}, true, "DNS lookup failed"},
		{"DNS temporary", &net.DNSError{Err: "server misbehaving", Name: "example.com", IsTemporary: true}, true, "DNS lookup failed"},
		{"DNS not found", &net.DNSError{Err: "no such host", Name: "example.com", IsNotFound: true}, false, "DNS lookup failed"},
		{"canceled", fmt.Errorf("wrapped: %w", context.Canceled), false, "canceled"},
		{"unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, false, "TLS certificate error"},
		{"hostname", x509.HostnameError{Host: "example.com", Certificate: &x509.Certificate{}}, false, "TLS certificate error"},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, false, "TLS certificate error"},
		{"a certificate error wrapping EOF", fmt.Errorf("%w: %w", io.EOF, x509.UnknownAuthorityError{}), false, "TLS certificate error"},
		{"bad scheme", errors.New(`unsupported protocol scheme "ftp"`), false, "error"},
		{"too many redirects", errors.New("stopped after 10 redirects"), false, "error"},
		{"no host", errors.New("http: no Host in request URL"), false, "error"},
	}
	for _, tt := range tests {
		d := retryhttp.DefaultClassifier(context.Background(), retry.Attempt{Err: tt.err})
		assert.Equal(t, tt.retry, d.Retry, "%s: Retry", tt.name)
		assert.Equal(t, tt.reason, d.Reason, "%s: Reason", tt.name)
		assert.Zero(t, d.RetryAfter, "%s: RetryAfter", tt.name)
	}
}

func TestDefaultClassifierStatuses(t *testing.T) {
	t.Parallel()
	for code := 100; code < 600; code++ {
		d := classifyStatus(code, nil)
		want := code == 408 || code == 429 || code == 502 || code == 503 || code == 504
		assert.Equal(t, want, d.Retry, "DefaultClassifier(%d).Retry", code)
	}
	assert.True(t, classifyStatus(409, http.Header{"Retry-After": {"1"}}).Retry, "409 with Retry-After: the key's first request still runs")
	assert.False(t, classifyStatus(409, nil).Retry, "409 without Retry-After: a real conflict")
	assert.Equal(t, "503 Service Unavailable", classifyStatus(503, nil).Reason, "the Reason is net/http's text, never the server's")
	assert.Equal(t, "599", classifyStatus(599, nil).Reason)
	wrapped := fmt.Errorf("get: %w", &retryhttp.StatusError{StatusCode: 503})
	assert.True(t, retryhttp.DefaultClassifier(context.Background(), retry.Attempt{Err: wrapped}).Retry, "found through wraps")
}

func classifyStatus(code int, h http.Header) retry.Decision {
	return retryhttp.DefaultClassifier(context.Background(), retry.Attempt{Err: &retryhttp.StatusError{StatusCode: code, Header: h}})
}
