package retryhttp_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logged returns a Logger that writes text lines to buf.
func logged(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// secretRequest is a POST that carries a secret everywhere a secret hides.
func secretRequest(t *testing.T, base string) *http.Request {
	t.Helper()
	u, err := url.Parse(base + "/orders?token=secret-query&page=2&sk_live_bare")
	require.NoError(t, err)
	u.User = url.UserPassword("alice", "secret-password")
	req := newRequest(t, http.MethodPost, u.String(), strings.NewReader("secret-body"))
	req.Header.Set("Authorization", "Bearer secret-bearer")
	req.Header.Set("Proxy-Authorization", "Basic secret-proxy")
	req.Header.Set("Cookie", "session=secret-cookie")
	req.Header.Set("Idempotency-Key", "secret-idempotency-key")
	return req
}

func TestLogsOneLinePerRetryAndOneOnGivingUp(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Set-Cookie", "sid=secret-set-cookie"))
	clk := retrytest.NewClock()
	var buf bytes.Buffer
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), Logger: logged(&buf)})
	r := do(t, c, clk, secretRequest(t, srv.URL))
	require.NoError(t, r.err)

	out := buf.String()
	assert.NotContains(t, out, "secret", "no secret in the log")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	for i, line := range lines[:3] {
		assert.Contains(t, line, "level=INFO")
		assert.Contains(t, line, `msg="retryhttp: retrying request"`)
		assert.Contains(t, line, "method=POST")
		assert.Contains(t, line, `url="`+srv.URL+`/orders?token=REDACTED&page=REDACTED&REDACTED"`)
		assert.Contains(t, line, "attempt="+string(rune('1'+i)))
		assert.Contains(t, line, "status=503")
		assert.Contains(t, line, `reason="503 Service Unavailable"`)
		assert.Contains(t, line, "wait=")
		assert.Regexp(t, `idempotency_key=sha256:[0-9a-f]{8}\b`, line)
	}
	assert.Contains(t, lines[3], "level=WARN")
	assert.Contains(t, lines[3], `msg="retryhttp: giving up"`)
	assert.Contains(t, lines[3], "attempt=4")
	assert.Contains(t, lines[3], `reason="attempts exhausted"`)
}

func TestLogsNothingOnSuccessAtOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(404))
	var buf bytes.Buffer
	resp, err := srv.client(&retryhttp.Transport{Logger: logged(&buf)}).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, buf.String())
}

// An error that quotes the URL, as *url.Error does, is logged without the
// URL's secrets.
func TestLoggedErrorsDoNotLeakTheURL(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clk := retrytest.NewClock()
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		req.Body.Close()
		return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: syscall.ECONNREFUSED}
	})
	p := fakePolicy(clk)
	p.MaxAttempts = 2
	c := &http.Client{Transport: &retryhttp.Transport{Base: base, Policy: p, Logger: logged(&buf)}}
	r := do(t, c, clk, secretRequest(t, "http://127.0.0.1:9"))
	require.Error(t, r.err)

	out := buf.String()
	assert.NotContains(t, out, "secret")
	assert.Contains(t, out, `reason="connection refused"`)
	assert.Contains(t, out, "connection refused")
	assert.Contains(t, out, "token=REDACTED")
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
}
