package retryhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
func logged(buf io.Writer) *slog.Logger {
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
		assert.Contains(t, line, `url=`+srv.URL+`/orders?REDACTED `, "the query's names too may be secrets")
		assert.Contains(t, line, "attempt="+string(rune('1'+i)))
		assert.Contains(t, line, "status=503")
		assert.Contains(t, line, `reason="503 Service Unavailable"`)
		assert.Contains(t, line, "wait=")
		assert.Regexp(t, `idempotency_key=hmac:[0-9a-f]{16}\b`, line)
	}
	assert.Contains(t, lines[3], "level=WARN")
	assert.Contains(t, lines[3], `msg="retryhttp: giving up"`)
	assert.Contains(t, lines[3], "attempt=4")
	assert.Contains(t, lines[3], `stop="attempts exhausted"`)
	assert.Contains(t, lines[3], `reason="503 Service Unavailable"`)
}

// A request that needed no retry logs nothing, whatever its status.
func TestLogsNothingOnSuccessAtOnce(t *testing.T) {
	t.Parallel()
	for _, code := range []int{200, 404, 500} {
		srv := newServer(t, status(code))
		var buf bytes.Buffer
		resp, err := srv.client(&retryhttp.Transport{Logger: logged(&buf)}).Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Empty(t, buf.String(), "status %d", code)
	}
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
	assert.Contains(t, out, "/orders?REDACTED")
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
}

// Error text is never logged, only its kind: a credential refresh whose
// error quotes the token endpoint's URL with a client secret, in any form,
// leaves none of it in the log.
func TestRefreshErrorTextIsNotLogged(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(401))
	var buf bytes.Buffer
	refreshErr := &url.Error{Op: "Post", URL: "https://idp.example/oauth/token?client_id=app&client_secret=s3cr3t-client", Err: syscall.ECONNREFUSED}
	tr := &retryhttp.Transport{
		Logger: logged(&buf),
		Refresh: func(context.Context, *http.Request) (string, error) {
			return "", fmt.Errorf("refresh: %w (also %q)", refreshErr, refreshErr.URL)
		},
	}
	req := get(t, srv.URL)
	req.Header.Set("Authorization", "Bearer old")
	resp, err := srv.client(tr).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	out := buf.String()
	assert.NotContains(t, out, "s3cr3t")
	assert.NotContains(t, out, "idp.example")
	assert.Contains(t, out, `msg="retryhttp: credential refresh failed"`)
	assert.Contains(t, out, `reason="connection refused"`)
}

// Paths can carry secrets: path parameters are cut, and a request named by
// a route is logged by its route, not its path.
func TestPathSecretsAreNotLogged(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200), status(503), status(200))
	clk := retrytest.NewClock()
	var buf bytes.Buffer
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), Logger: logged(&buf)})

	r := do(t, c, clk, get(t, srv.URL+"/app;jsessionid=SECRET1/x"))
	require.NoError(t, r.err)
	req := get(t, srv.URL+"/reset-password/tok_SECRET2")
	req = req.WithContext(retryhttp.WithRoute(req.Context(), "GET /reset-password/{token}"))
	r = do(t, c, clk, req)
	require.NoError(t, r.err)

	out := buf.String()
	assert.NotContains(t, out, "SECRET")
	assert.Contains(t, out, "url="+srv.URL+"/app/x ")
	assert.Contains(t, out, `route="GET /reset-password/{token}"`)
}
