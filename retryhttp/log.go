package retryhttp

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/stormguard/retry"
)

// What the Logger gets: the method; the request's route (WithRoute) or else
// its URL reduced to scheme, host and path, path parameters (";jsessionid=…")
// cut and any query replaced by "?REDACTED"; the attempt; its status; the
// reason, a fixed text such as "503 Service Unavailable" or "connection
// refused", never an error's message, which may quote a URL or a secret;
// and the wait. Never a header (not Authorization, Cookie or the key
// itself), never a body. An idempotency key appears only as a keyed hash
// (HMAC-SHA-256 under a random key made when the process starts): the lines
// of one request, and of one process, match, and the key cannot be guessed
// back from its hash however few values it may take.

// The kinds of line the Transport writes: with the status, the failure
// class that LogSampling groups lines by.
type logKind uint8

const (
	logRetrying logKind = iota
	logGivingUp
	logRefreshFailed
	logRefreshSkipped
	logRefreshTimedOut
	logServedStale
)

var logMessages = [...]string{
	logRetrying:        "retryhttp: retrying request",
	logGivingUp:        "retryhttp: giving up",
	logRefreshFailed:   "retryhttp: credential refresh failed",
	logRefreshSkipped:  "retryhttp: credential refresh skipped: too soon after the last one",
	logRefreshTimedOut: "retryhttp: credential refresh did not finish in time",
	logServedStale:     "retryhttp: served stale response",
}

func (k logKind) String() string { return logMessages[k] }

// logRetried logs the failed attempt that is retried after wait. The
// attempt's end, on the Policy's clock, is the line's time, so that most
// lines cost the sampler no clock read.
func (c *call) logRetried(failed *retry.Attempt, wait time.Duration) {
	c.logRetryAt(failed.Number, failed.Reason, wait, attemptEnd(failed))
}

// logRetry logs attempt n, which failed for reason and is retried after wait.
func (c *call) logRetry(n int, reason string, wait time.Duration) {
	c.logRetryAt(n, reason, wait, time.Time{})
}

func (c *call) logRetryAt(n int, reason string, wait time.Duration, at time.Time) {
	if c.t.Logger != nil && !c.t.sampler.exhausted.quiet() {
		ns, window := c.transitionTime(at)
		if ok, n := c.t.sampler.leave(&c.t.sampler.exhausted, c.origin(), ns, window); ok {
			c.logTransition(slog.LevelInfo, "retryhttp: retry budget recovered", n)
		}
	}
	if l := c.sample(slog.LevelInfo, logRetrying, n, reason, at); l != nil {
		c.write(l, slog.LevelInfo, logRetrying, n, slog.String("reason", reason), slog.Duration("wait", wait))
	}
}

// logGiveUp logs the end of a request that Do ended with an error: attempts
// or time ran out, the request must not be repeated, or the caller gave up.
// A request that left retrying to an outer loop did not give up: the outer
// loop logs, if anything.
func (c *call) logGiveUp(tr retry.Trace) {
	level := slog.LevelWarn
	if c.req.Context().Err() != nil {
		level = slog.LevelInfo // the caller's choice, not a failure
	}
	last := tr.Last()
	if tr.Stop() == retry.StopBudget && c.t.Logger != nil {
		ns, window := c.transitionTime(attemptEnd(&last))
		if ok, n := c.t.sampler.enter(&c.t.sampler.exhausted, c.origin(), ns, window); ok {
			c.logTransition(slog.LevelWarn, "retryhttp: retry budget exhausted", n)
		}
	}
	if l := c.sample(level, logGivingUp, tr.Attempts(), last.Reason, attemptEnd(&last)); l != nil {
		c.write(l, level, logGivingUp, tr.Attempts(), slog.String("stop", tr.Stop().String()), slog.String("reason", last.Reason))
	}
}

func (c *call) logRefreshFailed(err error) {
	reason := refreshReason(err)
	c.log(slog.LevelWarn, logRefreshFailed, c.n, reason, slog.String("reason", reason))
}

func (c *call) logRefreshSkipped() {
	c.log(slog.LevelInfo, logRefreshSkipped, c.n, "")
}

func (c *call) logRefreshTimedOut() {
	c.log(slog.LevelWarn, logRefreshTimedOut, c.n, "")
}

// attemptEnd is when a timed attempt ended; the zero time for an untimed
// one (Do times a first attempt only when it must).
func attemptEnd(a *retry.Attempt) time.Time {
	if a.Start.IsZero() {
		return time.Time{}
	}
	return a.Start.Add(a.Duration)
}

// logHold logs the start of a hold on the request's origin, or its end
// when started is false, if that is news.
func (c *call) logHold(started bool) {
	if c.t.Logger == nil {
		return
	}
	if started {
		ns, window := c.transitionTime(time.Time{})
		if ok, n := c.t.sampler.enter(&c.t.sampler.held, c.origin(), ns, window); ok {
			c.logTransition(slog.LevelWarn, "retryhttp: hold started", n)
		}
		return
	}
	// Only an answer that cleared the hold ends it: one to a request sent
	// before the hold began does not.
	if !c.t.sampler.held.quiet() && c.t.holds().Until(c.origin()).IsZero() {
		ns, window := c.transitionTime(time.Time{})
		if ok, n := c.t.sampler.leave(&c.t.sampler.held, c.origin(), ns, window); ok {
			c.logTransition(slog.LevelInfo, "retryhttp: hold ended", n)
		}
	}
}

// transitionTime is the time of a transition line (at if known) in
// UnixNano, and the window within which an origin writes one at most;
// with sampling Off, every move is written.
func (c *call) transitionTime(at time.Time) (ns, window int64) {
	if c.t.LogSampling.Off {
		return 0, 0
	}
	switch {
	case !at.IsZero():
		ns = at.UnixNano()
	case c.clk != nil:
		ns = c.clk.Now().UnixNano()
	default:
		ns = c.t.sampler.clock.UnixNano()
	}
	return ns, int64(c.t.LogSampling.window())
}

// logTransition writes a line about the request's origin that a summary
// could hide: a change of state, with the count of the origin's changes
// not written since its previous such line, if any.
func (c *call) logTransition(level slog.Level, msg string, suppressed int) {
	if l := c.t.Logger; l.Enabled(context.Background(), level) {
		if suppressed > 0 {
			l.LogAttrs(context.Background(), level, msg, slog.String("origin", c.origin()), slog.Int("suppressed_changes", suppressed))
			return
		}
		l.LogAttrs(context.Background(), level, msg, slog.String("origin", c.origin()))
	}
}

// log writes one line of kind about the request and its attempt n, if the
// Logger wants it and the Transport's LogSampling lets it through; reason
// is the line's fixed reason text.
func (c *call) log(level slog.Level, kind logKind, n int, reason string, more ...slog.Attr) {
	if l := c.sample(level, kind, n, reason, time.Time{}); l != nil {
		c.write(l, level, kind, n, more...)
	}
}

// sample returns the Logger if it wants a line of kind at level and
// LogSampling lets it through, after writing the summaries that are due;
// else nil. reason is for the summary of the lines it suppresses; at is the
// line's time, or zero to read the clock. A suppressed line costs no more
// than this: the line's attributes are built only for a line written.
func (c *call) sample(level slog.Level, kind logKind, n int, reason string, at time.Time) *slog.Logger {
	l := c.t.Logger
	if l == nil || !l.Enabled(c.req.Context(), level) {
		return nil
	}
	if c.t.LogSampling.Off {
		return l
	}
	var ns int64
	switch {
	case !at.IsZero():
		ns = at.UnixNano()
	case c.clk != nil:
		at = c.clk.Now()
		ns = at.UnixNano()
	default:
		// A window is a minute: the sampler's own coarse clock, read
		// once per 10ms, spares a suppressed line a clock read (and at
		// stays zero: the sampler makes a time.Time of ns only for a
		// summary).
		ns = c.t.sampler.clock.UnixNano()
	}
	pass, due := c.t.sampler.admitAt(c.t.LogSampling, sampleKey{c.origin(), sampleClass(kind, c.status)}, at, ns, level, reason, n, &c.hint)
	for _, m := range due {
		m.write(l)
	}
	if !pass {
		return nil
	}
	return l
}

// write writes the line of kind about the request and its attempt n.
func (c *call) write(l *slog.Logger, level slog.Level, kind logKind, n int, more ...slog.Attr) {
	attrs := make([]slog.Attr, 0, 6+len(more))
	attrs = append(attrs, slog.String("method", c.req.Method))
	if c.opts.route != "" {
		attrs = append(attrs, slog.String("route", c.opts.route))
	} else {
		attrs = append(attrs, slog.String("url", redactURL(c.req.URL)))
	}
	attrs = append(attrs, slog.Int("attempt", n))
	if c.status != 0 {
		attrs = append(attrs, slog.Int("status", c.status))
	}
	attrs = append(attrs, more...)
	if key := c.keyValue(); key != "" {
		attrs = append(attrs, slog.String("idempotency_key", fingerprint(key)))
	}
	l.LogAttrs(c.req.Context(), level, kind.String(), attrs...)
}

func (c *call) keyValue() string {
	if c.key != "" {
		return c.key
	}
	for k, v := range c.req.Header {
		if len(v) > 0 && strings.EqualFold(k, c.keyHeader) {
			return v[0]
		}
	}
	return ""
}

// redactURL returns u reduced to what is safe to log: scheme, host and
// path, without user info, fragment or path parameters, and with any query
// replaced by "?REDACTED": "https://host/orders?REDACTED". A path can still
// carry an id or a token (/reset-password/tok_…): name such requests with
// WithRoute, which is logged in place of the URL.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	if u.Opaque != "" { // "http:user:pass@host": net/http never sends it, but say nothing of it
		return u.Scheme + ":REDACTED"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	if strings.Contains(r.Path, ";") {
		segs := strings.Split(r.Path, "/")
		for i, s := range segs {
			segs[i], _, _ = strings.Cut(s, ";")
		}
		r.Path = strings.Join(segs, "/")
	}
	s := r.String()
	if u.RawQuery != "" || u.ForceQuery {
		s += "?REDACTED"
	}
	return s
}

// fingerprintKey is the key of the keyed hash that stands for idempotency
// keys in logs: random, made once per process, never written after.
var fingerprintKey = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails: crypto/rand crashes the program instead
	return k
}()

// fingerprint identifies an idempotency key in logs without revealing it.
func fingerprint(key string) string {
	m := hmac.New(sha256.New, fingerprintKey)
	m.Write([]byte(key))
	return "hmac:" + hex.EncodeToString(m.Sum(nil)[:8])
}
