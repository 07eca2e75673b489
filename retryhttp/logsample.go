package retryhttp

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// LogSampling says how a [Transport] thins out its Logger's lines while a
// host keeps failing, so that an outage does not bury the service's own
// logs under thousands of identical retry lines.
//
// Lines are grouped by origin (scheme, host and port) and failure class:
// the kind of line ("retrying request", "giving up", a credential refresh
// line) and the attempt's status, or no status when the attempt had no
// response. A streak of one group is its lines with less than Window
// between each and the next. The first First lines of a streak are written
// as they come; after them, each Window gets one line at most, at the
// first line of the group after the Window ends (or at the first line of
// any group, for a group that went quiet): "retryhttp: suppressed N
// similar retry events", with the origin, the class, the count, the times
// of the first and last suppressed line, the last one's reason and the
// highest attempt among them. The count is exact: every line is either
// written or counted in exactly one summary, and a summary is written once
// the Transport logs anything after its Window has ended.
//
// The zero LogSampling samples with the defaults: First 5, Window 1m. A
// First or Window of 0 or less means its default. Up to 256 groups are
// tracked at a time; lines of further groups share one group whose origin
// is "(other)". Time is read from the request's Policy.Clock when it has
// one.
//
// The transitions a summary could hide are written apart from the
// groups, with the origin: "retryhttp: retry budget exhausted" (Warn) when a
// request to an origin first gives up for its Budget, and "retryhttp:
// retry budget recovered" (Info) when a request to that origin is next
// allowed a retry; "retryhttp: hold started" (Warn) when an origin first
// asks to be held back (a 429 or 503 with a Retry-After, see [HoldMode]),
// and "retryhttp: hold ended" (Info) when it next answers normally. A hold
// whose time runs out, followed by another Retry-After before a normal
// answer, is one hold. So are the changes of the Breaker and Throttle of
// the request's Policy or of the sets of Transport.Guards:
// "retryhttp: circuit breaker opened" (Warn), "retryhttp: circuit breaker
// half-open" (Info, when OpenFor ends, whether or not a request comes) and
// "retryhttp: circuit breaker closed" (Info); "retryhttp: throttling
// started" (Warn) when the Throttle's reject probability rises above zero,
// and "retryhttp: throttling stopped" (Info) when it is next seen at zero.
// Those of Breakers and Throttles carry the origin; a Policy's own, shared
// by every origin, carries none. The Budget's and the hold's are written
// at most once a Window per origin: a move within a Window of the
// origin's latest such line is held back, and the origin's next event a
// Window on writes the line of the state it is in then, with
// "suppressed_changes", the count of the moves not written; so an origin
// that flaps at the edge of its Budget writes a line a minute, not a pair
// a second, and its latest line says its state within a Window.
type LogSampling struct {
	// Off writes every line, unsampled [false].
	Off bool

	// First is how many lines of a streak are written before lines are
	// suppressed [5].
	First int

	// Window is how often a summary of the suppressed lines is written,
	// and how long a group must be quiet for its streak to end [1m].
	Window time.Duration
}

const (
	defaultLogFirst  = 5
	defaultLogWindow = time.Minute
	maxLogKeys       = 256
	overflowOrigin   = "(other)"
)

func (s LogSampling) first() int {
	if s.First <= 0 {
		return defaultLogFirst
	}
	return s.First
}

func (s LogSampling) window() time.Duration {
	if s.Window <= 0 {
		return defaultLogWindow
	}
	return s.Window
}

// sampleKey is a group of similar lines: origin and failure class. A
// lookup neither builds nor copies a string, and hashes one.
type sampleKey struct {
	origin string
	class  int // sampleClass
}

// sampleClass is the failure class of a line of kind about an attempt
// with status (0: no response).
func sampleClass(kind logKind, status int) int { return int(kind)<<16 | status&0xffff }

func (k sampleKey) kind() logKind { return logKind(k.class >> 16) }
func (k sampleKey) status() int   { return k.class & 0xffff }

// sampleState is one group's streak and the lines it suppressed in the
// current window.
type sampleState struct {
	key    sampleKey // the group's, or the overflow group's
	gone   bool      // forgotten by a sweep: a hint to it is stale
	passed int       // lines of the streak written; -1: new
	seen   int64     // the latest line, written or not, UnixNano

	// The window's suppressed lines: how many, and the times of the first
	// and the last, in UnixNano and as given (zero for a line of the
	// sampler's clock, whose time.Time is made only for a summary).
	n               int
	firstNs, lastNs int64
	first, last     time.Time
	reason          string
	maxAttempt      int
	level           slog.Level
}

// logSampler holds a Transport's groups. Its zero value is ready.
type logSampler struct {
	mu        sync.Mutex
	keys      map[sampleKey]*sampleState
	nextSweep int64        // UnixNano; math.MinInt64 before the first line
	clock     coarse.Clock // the time of a line whose call is on the real clock and untimed

	// exhausted holds the origins whose Budget refused a retry and that
	// have not been allowed one since; held, those that asked to be held
	// back and have not answered normally since.
	exhausted, held originStates
}

// summary is what one "suppressed N similar retry events" line says.
type summary struct {
	key        sampleKey
	level      slog.Level
	n          int
	first      time.Time
	last       time.Time
	reason     string
	maxAttempt int
}

// admit reports whether a line of group k, at now, is written, and returns
// the summaries that are due, to be written before it. It allocates only
// when a group is new or a summary is due.
//
// hint, if not nil, is the caller's memory of its last group: a call whose
// lines repeat a group (a retry after a retry) skips the map. It is read
// and written only under the sampler's lock.
func (s *logSampler) admit(cfg LogSampling, k sampleKey, now time.Time, level slog.Level, reason string, attempt int, hint *sampleHint) (bool, []summary) {
	return s.admitAt(cfg, k, now, now.UnixNano(), level, reason, attempt, hint)
}

// admitAt is admit at ns, the UnixNano of now; a zero now stands for
// time.Unix(0, ns), a time of the sampler's coarse clock: a suppressed
// line then builds no time.Time, and compares its times as integers.
func (s *logSampler) admitAt(cfg LogSampling, k sampleKey, now time.Time, ns int64, level slog.Level, reason string, attempt int, hint *sampleHint) (bool, []summary) {
	window, first := int64(cfg.window()), cfg.first()
	var due []summary
	s.mu.Lock()
	if s.keys == nil {
		s.keys = make(map[sampleKey]*sampleState)
		s.nextSweep = math.MinInt64
	}
	if ns >= s.nextSweep {
		due = s.sweep(ns, window)
	}
	var st *sampleState
	if hint != nil && hint.st != nil && !hint.st.gone && hint.key == k {
		st = hint.st
	} else {
		st = s.lookup(k)
		if hint != nil {
			hint.key, hint.st = k, st
		}
	}
	if st.passed < 0 { // new
		st.passed = 0
	} else if ns-st.seen >= window { // quiet for a window: a new streak
		due = st.flush(st.key, due)
		st.passed = 0
	}
	if st.n > 0 && ns-st.firstNs >= window {
		due = st.flush(st.key, due)
	}
	st.seen = ns
	if st.passed < first {
		st.passed++
		s.mu.Unlock()
		return true, due
	}
	if st.n == 0 {
		st.first, st.firstNs, st.level, st.maxAttempt = now, ns, level, attempt
	}
	st.n++
	st.last, st.lastNs, st.reason = now, ns, reason
	st.level = max(st.level, level)
	st.maxAttempt = max(st.maxAttempt, attempt)
	s.mu.Unlock() // not deferred: the suppressed path is the hot one
	return false, due
}

// lookup returns k's group, made new (passed < 0) if it has none, or the
// overflow group when the map is full.
func (s *logSampler) lookup(k sampleKey) *sampleState {
	st := s.keys[k]
	if st == nil {
		if len(s.keys) >= maxLogKeys {
			k = sampleKey{origin: overflowOrigin}
			st = s.keys[k]
		}
		if st == nil {
			st = &sampleState{key: k, passed: -1}
			s.keys[k] = st
		}
	}
	return st
}

// sampleHint is a call's last group, for [logSampler.admit].
type sampleHint struct {
	key sampleKey
	st  *sampleState
}

// sweep writes the summaries of groups whose window has ended and forgets
// the groups that went quiet, so that a group that stops failing still has
// its count written and the map stays small. It runs once per window.
func (s *logSampler) sweep(ns, window int64) []summary {
	var due []summary
	for k, st := range s.keys {
		if st.n > 0 && ns-st.firstNs >= window {
			due = st.flush(k, due)
		}
		if st.n == 0 && ns-st.seen >= window {
			st.gone = true
			delete(s.keys, k)
		}
	}
	s.nextSweep = ns + window
	if s.nextSweep < ns { // a Window of centuries: no sweep before the end of time
		s.nextSweep = math.MaxInt64
	}
	// In a stable order, not the map's: lines of one origin stay together.
	slices.SortFunc(due, func(a, b summary) int {
		return cmp.Or(strings.Compare(a.key.origin, b.key.origin), cmp.Compare(a.key.class, b.key.class))
	})
	return due
}

// flush appends st's summary, if it suppressed anything, and starts a new
// window.
func (st *sampleState) flush(k sampleKey, due []summary) []summary {
	if st.n == 0 {
		return due
	}
	first, last := st.first, st.last
	if first.IsZero() {
		first = time.Unix(0, st.firstNs)
	}
	if last.IsZero() {
		last = time.Unix(0, st.lastNs)
	}
	due = append(due, summary{key: k, level: st.level, n: st.n, first: first, last: last, reason: st.reason, maxAttempt: st.maxAttempt})
	st.n, st.reason, st.maxAttempt = 0, "", 0
	return due
}

// write logs the summary. It says only the origin, the class, counts,
// times, the reason (a fixed text) and an attempt number: never a URL,
// route or key of one request, for it stands for many.
func (m summary) write(l *slog.Logger) {
	attrs := []slog.Attr{slog.String("origin", m.key.origin)}
	if m.key.origin != overflowOrigin {
		attrs = append(attrs, slog.String("event", m.key.kind().String()))
		if s := m.key.status(); s != 0 {
			attrs = append(attrs, slog.Int("status", s))
		}
	}
	attrs = append(attrs,
		slog.Int("suppressed", m.n),
		slog.Time("first", m.first),
		slog.Time("last", m.last),
		slog.String("last_reason", m.reason),
		slog.Int("max_attempt", m.maxAttempt),
	)
	// Background: the summary belongs to many requests, not to the one
	// whose line happened to make it due.
	l.LogAttrs(context.Background(), m.level, "retryhttp: suppressed "+strconv.Itoa(m.n)+" similar retry events", attrs...)
}
