package retryhttp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// lineCounter drives a sampler and counts the lines it would write, per
// minute since t0, and every event a written line or a summary stands for.
type lineCounter struct {
	s       logSampler
	cfg     LogSampling
	perMin  map[int]int
	events  int // events admitted
	covered int // events written or counted in a summary
	sums    []summary
	hint    sampleHint // as a call keeps it: hits, misses and stale hints all happen
}

func newLineCounter(cfg LogSampling) *lineCounter {
	return &lineCounter{cfg: cfg, perMin: map[int]int{}}
}

func (lc *lineCounter) event(k sampleKey, now time.Time, reason string, attempt int) {
	lc.events++
	pass, due := lc.s.admit(lc.cfg, k, now, slog.LevelInfo, reason, attempt, &lc.hint)
	m := int(now.Sub(t0) / time.Minute)
	for _, d := range due {
		lc.perMin[m]++
		lc.covered += d.n
		lc.sums = append(lc.sums, d)
	}
	if pass {
		lc.perMin[m]++
		lc.covered++
	}
}

// The proof: 10,000 failing requests a second for 60s against one origin,
// each logging three retries and a give-up, write at most 20 lines in the
// first minute and at most 12 in each minute after, and every event is
// written or counted once.
func TestLogSamplingOutage(t *testing.T) {
	t.Parallel()
	lc := newLineCounter(LogSampling{})
	retrying := sampleKey{"https://api.example", sampleClass(logRetrying, 503)}
	givingUp := sampleKey{"https://api.example", sampleClass(logGivingUp, 503)}
	const perSecond, seconds = 10_000, 60
	for i := range perSecond * seconds {
		now := t0.Add(time.Duration(i) * time.Second / perSecond)
		for a := 1; a <= 3; a++ {
			lc.event(retrying, now, "503 Service Unavailable", a)
		}
		lc.event(givingUp, now, "503 Service Unavailable", 4)
	}
	// The outage goes on at one request a second for three more minutes.
	for now := t0.Add(seconds * time.Second); now.Before(t0.Add(4 * time.Minute)); now = now.Add(time.Second) {
		lc.event(retrying, now, "connection refused", 2)
		lc.event(givingUp, now, "connection refused", 4)
	}
	// Another origin's line, a window later, writes what is still due.
	lc.event(sampleKey{"https://other.example", sampleClass(logRetrying, 503)}, t0.Add(6*time.Minute), "503 Service Unavailable", 1)

	t.Logf("lines per minute: %v", lc.perMin)
	assert.LessOrEqual(t, lc.perMin[0], 20, "lines in the first minute")
	for m := 1; m < 4; m++ {
		assert.LessOrEqual(t, lc.perMin[m], 12, "lines in minute %d", m+1)
		assert.Positive(t, lc.perMin[m], "a summary in minute %d", m+1)
	}
	assert.Equal(t, lc.events, lc.covered, "every event is written or counted exactly once")
	var retries []summary
	for _, m := range lc.sums {
		if m.key == retrying {
			retries = append(retries, m)
		}
	}
	require.Len(t, retries, 4, "one retry summary a minute")
	first := retries[0]
	// The window starts at the first suppressed line, the second request's
	// third attempt, so the first summary has the outage's suppressed
	// retries and the first of the slower ones, at 60s.
	assert.Equal(t, t0.Add(time.Second/perSecond), first.first)
	assert.Equal(t, 3*perSecond*seconds-5+1, first.n)
	assert.Equal(t, t0.Add(seconds*time.Second), first.last)
	assert.Equal(t, 3, first.maxAttempt)
	assert.Equal(t, "connection refused", retries[3].reason)
	assert.Equal(t, 2, retries[3].maxAttempt)
}

// A streak ends when its group is quiet for a window: what it suppressed
// is summed up, and the next First lines are written again.
func TestLogSamplingNewStreakAfterQuiet(t *testing.T) {
	t.Parallel()
	lc := newLineCounter(LogSampling{First: 2, Window: 10 * time.Second})
	k := sampleKey{"https://api.example", sampleClass(logRetrying, 0)}
	for i := range 5 {
		lc.event(k, t0.Add(time.Duration(i)*time.Second), "timeout", i+1)
	}
	require.Equal(t, 2, lc.covered, "2 written, 3 suppressed")
	lc.event(k, t0.Add(time.Minute), "connection refused", 1)
	lc.event(k, t0.Add(time.Minute+time.Second), "connection refused", 1)
	require.Len(t, lc.sums, 1)
	assert.Equal(t, summary{key: k, level: slog.LevelInfo, n: 3, first: t0.Add(2 * time.Second), last: t0.Add(4 * time.Second), reason: "timeout", maxAttempt: 5}, lc.sums[0])
	assert.Equal(t, lc.events, lc.covered, "both lines of the new streak are written")
}

// Off writes every line.
func TestLogSamplingOff(t *testing.T) {
	t.Parallel()
	var lines int
	h := slog.NewTextHandler(io.Discard, nil)
	tr := &Transport{Logger: slog.New(countHandler{h, &lines}), LogSampling: LogSampling{Off: true}}
	req, err := http.NewRequest(http.MethodGet, "https://api.example/x", nil)
	require.NoError(t, err)
	c := tr.newCall(req, options{})
	c.status = 503
	for range 100 {
		c.logRetry(1, "503 Service Unavailable", time.Second)
	}
	assert.Equal(t, 100, lines)
}

// However many origins fail, the sampler tracks a bounded number of
// groups; the lines of the rest share one, and none is lost.
func TestLogSamplingBoundedKeys(t *testing.T) {
	t.Parallel()
	lc := newLineCounter(LogSampling{})
	for i := range 10 * maxLogKeys {
		k := sampleKey{"https://h" + string(rune('a'+i%26)) + time.Duration(i).String() + ".example", sampleClass(logRetrying, 503)}
		for range 3 {
			lc.event(k, t0.Add(time.Duration(i)*time.Millisecond), "503 Service Unavailable", 1)
		}
	}
	assert.LessOrEqual(t, len(lc.s.keys), maxLogKeys+1)
	lc.event(sampleKey{origin: "https://late.example"}, t0.Add(time.Hour), "", 1)
	var overflow int
	for _, m := range lc.sums {
		if m.key.origin == overflowOrigin {
			overflow += m.n
		}
	}
	assert.Positive(t, overflow, "the overflow group sums up its lines")
	assert.Equal(t, lc.events, lc.covered)
	assert.LessOrEqual(t, len(lc.s.keys), 2, "quiet groups are forgotten")
}

// The count in the summary is exact when lines come from many goroutines.
func TestLogSamplingExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	var s logSampler
	k := sampleKey{"https://api.example", sampleClass(logGivingUp, 503)}
	var mu sync.Mutex
	var written, counted int
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var hint sampleHint
			for i := range 500 {
				// Times spread over three windows, out of order across goroutines.
				now := t0.Add(time.Duration(g*500+i) * 10 * time.Millisecond)
				pass, due := s.admit(LogSampling{}, k, now, slog.LevelWarn, "503 Service Unavailable", 1, &hint)
				mu.Lock()
				if pass {
					written++
				}
				for _, d := range due {
					counted += d.n
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	_, due := s.admit(LogSampling{}, sampleKey{origin: "https://other.example"}, t0.Add(time.Hour), slog.LevelInfo, "", 1, nil)
	for _, d := range due {
		counted += d.n
	}
	assert.Equal(t, 32*500, written+counted)
}

// A suppressed line allocates nothing, all the way from the Transport's
// log call, whether it reads the clock or not.
func TestSuppressedLineDoesNotAllocate(t *testing.T) {
	c := suppressingCall(t)
	failed := timedAttempt()
	assert.Zero(t, testing.AllocsPerRun(1000, func() { c.logRetried(&failed, time.Second) }), "a timed attempt")
	failed.Start = time.Time{}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { c.logRetried(&failed, time.Second) }), "an untimed first attempt")
	tr := retry.Trace{}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { c.logGiveUp(tr) }), "giving up")
}

// timedAttempt is a failed attempt as Do reports a retry's: timed.
func timedAttempt() retry.Attempt {
	return retry.Attempt{Number: 3, Start: time.Now(), Duration: time.Millisecond, Reason: "503 Service Unavailable"}
}

// suppressingCall returns a call whose retry lines are all suppressed from
// now on.
func suppressingCall(tb testing.TB) *call {
	tb.Helper()
	var lines int
	tr := &Transport{Logger: slog.New(countHandler{slog.NewTextHandler(io.Discard, nil), &lines})}
	req, err := http.NewRequest(http.MethodGet, "https://api.example/x", nil)
	require.NoError(tb, err)
	c := tr.newCall(req, options{})
	c.status = 503
	for range 10 {
		c.logRetry(3, "503 Service Unavailable", time.Second)
		c.logGiveUp(retry.Trace{})
	}
	require.Equal(tb, 2*defaultLogFirst, lines)
	return c
}

// BenchmarkSuppressedLine is the cost of a retry line that the sampler
// suppresses, from the Transport's log call: for a retried attempt that Do
// timed (every attempt after the first), and for an untimed first attempt,
// which costs a clock read.
func BenchmarkSuppressedLine(b *testing.B) {
	b.Run("timed", func(b *testing.B) {
		c := suppressingCall(b)
		failed := timedAttempt()
		b.ReportAllocs()
		for b.Loop() {
			c.logRetried(&failed, time.Second)
		}
	})
	b.Run("untimed", func(b *testing.B) {
		c := suppressingCall(b)
		failed := timedAttempt()
		failed.Start = time.Time{}
		b.ReportAllocs()
		for b.Loop() {
			c.logRetried(&failed, time.Second)
		}
	})
}

// BenchmarkSamplerAdmit is the sampler's own part of that cost.
func BenchmarkSamplerAdmit(b *testing.B) {
	var s logSampler
	k := sampleKey{"https://api.example", sampleClass(logRetrying, 503)}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		s.admit(LogSampling{}, k, now, slog.LevelInfo, "503 Service Unavailable", 2, nil)
	}
}

// countHandler counts the records that reach it.
type countHandler struct {
	slog.Handler
	n *int
}

func (h countHandler) Handle(ctx context.Context, r slog.Record) error {
	*h.n++
	return h.Handler.Handle(ctx, r)
}

// A call's hint to a group that a sweep forgot is not used: the group's
// lines go to the map's group, where the next summary finds them.
func TestLogSamplingStaleHint(t *testing.T) {
	t.Parallel()
	var s logSampler
	var hint sampleHint
	k := sampleKey{"https://api.example", sampleClass(logRetrying, 503)}
	cfg := LogSampling{First: 1, Window: time.Second}
	s.admit(cfg, k, t0, slog.LevelInfo, "503 Service Unavailable", 1, &hint)
	old := hint.st
	// Another group's line, two windows on, sweeps k away.
	s.admit(cfg, sampleKey{origin: "https://other.example"}, t0.Add(2*time.Second), slog.LevelInfo, "", 1, nil)
	require.NotContains(t, s.keys, k)
	for i := range 3 {
		s.admit(cfg, k, t0.Add(3*time.Second+time.Duration(i)), slog.LevelInfo, "timeout", 2, &hint)
	}
	require.Same(t, s.keys[k], hint.st)
	assert.NotSame(t, old, hint.st)
	_, due := s.admit(cfg, k, t0.Add(5*time.Second), slog.LevelInfo, "timeout", 2, &hint)
	var n int
	for _, d := range due {
		if d.key == k {
			n += d.n
		}
	}
	assert.Equal(t, 2, n, "the new streak's 1 line passed and 2 were suppressed")
}

// Lines of the sampler's coarse clock (an untimed attempt on the real
// clock) come with no time.Time, only their UnixNano: their summary still
// says when the first and the last suppressed line came, and mixed with
// timed lines keeps the times those were given.
func TestLogSamplingCoarseTimes(t *testing.T) {
	t.Parallel()
	var s logSampler
	k := sampleKey{"https://api.example", sampleClass(logRetrying, 503)}
	cfg := LogSampling{First: 1, Window: time.Second}
	at := func(d time.Duration) int64 { return t0.Add(d).UnixNano() }
	pass, _ := s.admitAt(cfg, k, time.Time{}, at(0), slog.LevelInfo, "503 Service Unavailable", 1, nil)
	require.True(t, pass)
	pass, _ = s.admitAt(cfg, k, time.Time{}, at(100*time.Millisecond), slog.LevelInfo, "503 Service Unavailable", 2, nil)
	require.False(t, pass)
	timed := t0.Add(200 * time.Millisecond)
	pass, _ = s.admitAt(cfg, k, timed, timed.UnixNano(), slog.LevelInfo, "timeout", 3, nil)
	require.False(t, pass)
	// A line after the window writes the summary first.
	_, due := s.admitAt(cfg, k, time.Time{}, at(1100*time.Millisecond), slog.LevelInfo, "timeout", 1, nil)
	require.Len(t, due, 1)
	assert.Equal(t, 2, due[0].n)
	assert.True(t, time.Unix(0, at(100*time.Millisecond)).Equal(due[0].first), "first: %v", due[0].first)
	assert.Equal(t, timed, due[0].last)
	assert.Equal(t, 3, due[0].maxAttempt)
}

// The sets of origins whose budget is exhausted or which are held forget
// the one that entered first when they are full, rather than stop logging
// the moves of every new origin: after maxLogKeys origins that never came
// back, a new outage's line is still written.
func TestOriginStatesForgetTheOldestWhenFull(t *testing.T) {
	t.Parallel()
	var s logSampler
	var st originStates
	enter := func(o string) bool { ok, _ := s.enter(&st, o, 0, 0); return ok }
	leave := func(o string) bool { ok, _ := s.leave(&st, o, 0, 0); return ok }
	for i := range maxLogKeys {
		require.True(t, enter(fmt.Sprintf("https://gone-%d.example", i)))
	}
	assert.True(t, enter("https://new.example"), "a new origin's move is logged")
	assert.False(t, enter("https://new.example"), "once")
	assert.Equal(t, int32(maxLogKeys), st.n.Load(), "still bounded")
	assert.False(t, leave("https://gone-0.example"), "the first to enter was forgotten")
	assert.True(t, leave("https://gone-1.example"))
}

// An origin that flaps in and out of a state (a Budget at the edge of
// exhaustion, holds at 5% 429s) writes one line a Window, not one a move:
// the moves in between are counted, and the next line written says how
// many there were. Another origin's moves are its own.
func TestOriginTransitionsAreRateLimited(t *testing.T) {
	t.Parallel()
	var s logSampler
	var st originStates
	window := int64(time.Minute)
	const a, b = "https://a.example", "https://b.example"
	written := 0
	for i := range 450 { // a flip every 100 ms for 45 s
		ns := int64(i) * int64(100*time.Millisecond)
		var ok bool
		var n int
		if i%2 == 0 {
			ok, n = s.enter(&st, a, ns, window)
		} else {
			ok, n = s.leave(&st, a, ns, window)
		}
		if ok {
			written++
			assert.Zero(t, n)
		}
	}
	assert.Equal(t, 1, written, "one line in the first minute, not 450")
	ok, n := s.enter(&st, b, 0, window)
	assert.True(t, ok, "another origin is not held back")
	assert.Zero(t, n)

	ok, n = s.enter(&st, a, int64(2*time.Minute), window) // a is out after an even count of flips
	assert.True(t, ok, "a Window later, the next move is written")
	assert.Equal(t, 449, n, "with the count of the moves not written")
	ok, _ = s.leave(&st, a, int64(2*time.Minute)+1, window)
	assert.False(t, ok)
	assert.Equal(t, int32(1), st.n.Load(), "the state is tracked exactly: a out, b in")
}
