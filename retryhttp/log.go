package retryhttp

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/stormguard/retry"
)

// What the Logger gets: the method, the URL without user info and with its
// query values redacted, the attempt, its status or error, the reason and the
// wait. Never a header: not Authorization, Proxy-Authorization, Cookie or
// Set-Cookie, and the idempotency key only as a short hash, enough to match
// the lines of one request without revealing the key.

// logRetry logs attempt n, which failed for reason and is retried after wait.
func (c *call) logRetry(n int, reason string, wait time.Duration) {
	l := c.t.Logger
	if l == nil || !l.Enabled(c.req.Context(), slog.LevelInfo) {
		return
	}
	attrs := c.attrs(n, slog.String("reason", reason), slog.Duration("wait", wait))
	l.LogAttrs(c.req.Context(), slog.LevelInfo, "retryhttp: retrying request", attrs...)
}

// logGiveUp logs the end of a request that Do ended with an error: attempts
// or time ran out, the request must not be repeated, or the caller gave up.
func (c *call) logGiveUp(tr retry.Trace) {
	level := slog.LevelWarn
	if c.req.Context().Err() != nil {
		level = slog.LevelInfo // the caller's choice, not a failure
	}
	l := c.t.Logger
	if l == nil || !l.Enabled(c.req.Context(), level) {
		return
	}
	attrs := c.attrs(tr.Attempts(), slog.String("reason", tr.Reason()))
	l.LogAttrs(c.req.Context(), level, "retryhttp: giving up", attrs...)
}

func (c *call) logRefreshFailed(err error) {
	l := c.t.Logger
	if l == nil || !l.Enabled(c.req.Context(), slog.LevelWarn) {
		return
	}
	attrs := c.attrs(c.n, slog.String("refresh_error", c.redact(err.Error())))
	l.LogAttrs(c.req.Context(), slog.LevelWarn, "retryhttp: credential refresh failed", attrs...)
}

// attrs describes the request and its latest attempt, number n, with more
// attributes after the attempt's outcome.
func (c *call) attrs(n int, more ...slog.Attr) []slog.Attr {
	attrs := make([]slog.Attr, 0, 5+len(more))
	attrs = append(attrs,
		slog.String("method", c.req.Method),
		slog.String("url", redactURL(c.req.URL)),
		slog.Int("attempt", n))
	switch {
	case c.status != 0:
		attrs = append(attrs, slog.Int("status", c.status))
	case c.err != nil:
		attrs = append(attrs, slog.String("error", c.redact(c.err.Error())))
	}
	attrs = append(attrs, more...)
	if key := c.keyValue(); key != "" {
		attrs = append(attrs, slog.String("idempotency_key", fingerprint(key)))
	}
	return attrs
}

// redact removes the request's URL from an error's text, in case the error
// quotes it, as a *url.Error does.
func (c *call) redact(text string) string {
	if c.req.URL == nil {
		return text
	}
	return strings.ReplaceAll(text, c.req.URL.String(), redactURL(c.req.URL))
}

func (c *call) keyValue() string {
	if c.key != "" {
		return c.key
	}
	return c.req.Header.Get(c.keyHeader)
}

// redactURL returns u without user info or fragment, and with the value of
// every query parameter replaced: "https://host/p?token=REDACTED&page=REDACTED".
// A bare parameter ("?sk_live_123") is replaced whole.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	r.User = nil
	r.Fragment, r.RawFragment = "", ""
	if r.Opaque != "" { // "http:user:pass@host": net/http never sends it, but say nothing of it
		r.Opaque = "REDACTED"
	}
	if r.RawQuery != "" {
		var b strings.Builder
		for i, param := range strings.Split(r.RawQuery, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, _, hasValue := strings.Cut(param, "=")
			if !hasValue {
				// A bare parameter is as likely a token (?sk_live_…) as a flag.
				b.WriteString("REDACTED")
				continue
			}
			b.WriteString(name)
			b.WriteString("=REDACTED")
		}
		r.RawQuery = b.String()
	}
	return r.String()
}

// fingerprint identifies an idempotency key in logs without revealing it.
func fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(sum[:4])
}
