package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linesWith returns the lines of out that contain s.
func linesWith(out, s string) []string {
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, s) {
			got = append(got, line)
		}
	}
	return got
}

var suppressedN = regexp.MustCompile(`\bsuppressed=(\d+)\b`)

// suppressedCount sums the counts of the summaries in lines.
func suppressedCount(t *testing.T, lines []string) int {
	t.Helper()
	var n int
	for _, line := range lines {
		m := suppressedN.FindStringSubmatch(line)
		require.NotNil(t, m, line)
		v, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		n += v
	}
	return n
}

// Through a Transport on a fake clock, an origin that keeps failing gets
// the first 5 lines of each class, then a summary once the window has
// passed; the summary names the origin, not the request, and holds no
// secret.
func TestLogSamplingThroughTransport(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Set-Cookie", "sid=secret-set-cookie"))
	clk := retrytest.NewClock()
	var buf bytes.Buffer
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), Logger: logged(&buf)})
	for range 10 { // 30 retry lines and 10 give-ups, within 15s
		require.NoError(t, do(t, c, clk, secretRequest(t, srv.URL)).err)
	}
	out := buf.String()
	assert.Len(t, linesWith(out, `msg="retryhttp: retrying request"`), 5, out)
	assert.Len(t, linesWith(out, `msg="retryhttp: giving up"`), 5, out)
	assert.Empty(t, linesWith(out, "suppressed"), "no summary before the window ends")

	clk.Add(time.Minute)
	require.NoError(t, do(t, c, clk, secretRequest(t, srv.URL)).err)
	out = buf.String()
	assert.NotContains(t, out, "secret")
	sums := linesWith(out, "suppressed")
	require.Len(t, sums, 2, out)
	retries, giveUps := sums[0], sums[1]
	if strings.Contains(retries, "giving up") { // a sweep writes them in any order
		retries, giveUps = giveUps, retries
	}
	for _, line := range sums {
		assert.Contains(t, line, "origin="+srv.URL+" ")
		assert.NotContains(t, line, "/orders", "a summary stands for many requests: no URL")
		assert.NotContains(t, line, "idempotency_key")
		assert.Contains(t, line, "status=503")
		assert.Contains(t, line, `last_reason="503 Service Unavailable"`)
		assert.Regexp(t, `first=\S+ last=\S+`, line)
	}
	assert.Contains(t, retries, `msg="retryhttp: suppressed 25 similar retry events"`)
	assert.Contains(t, retries, `event="retryhttp: retrying request"`)
	assert.Contains(t, retries, "level=INFO")
	assert.Contains(t, retries, "suppressed=25 ")
	assert.Contains(t, retries, "max_attempt=3")
	assert.Contains(t, giveUps, `msg="retryhttp: suppressed 5 similar retry events"`)
	assert.Contains(t, giveUps, `event="retryhttp: giving up"`)
	assert.Contains(t, giveUps, "level=WARN")
	assert.Contains(t, giveUps, "max_attempt=4")
	// The quiet minute ended the streak: the new request's lines are written.
	assert.Len(t, linesWith(out, `msg="retryhttp: retrying request"`), 5+3)
	assert.Len(t, linesWith(out, `msg="retryhttp: giving up"`), 5+1)
}

// LogSampling.Off writes every line; First and Window tune the sampler.
func TestLogSamplingSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		sampling retryhttp.LogSampling
		retries  int // retry lines of 10 requests that each retry 3 times
	}{
		{"default", retryhttp.LogSampling{}, 5},
		{"off", retryhttp.LogSampling{Off: true}, 30},
		{"first 12", retryhttp.LogSampling{First: 12}, 12},
		{"negative means default", retryhttp.LogSampling{First: -1, Window: -time.Second}, 5},
		// Each request takes 1.4s of waits: a 1s window sums up each
		// request's suppressed lines at the next.
		{"window 1s", retryhttp.LogSampling{First: 1, Window: time.Second}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(503))
			clk := retrytest.NewClock()
			var buf bytes.Buffer
			c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), Logger: logged(&buf), LogSampling: tc.sampling})
			for range 10 {
				require.NoError(t, do(t, c, clk, get(t, srv.URL)).err)
			}
			out := buf.String()
			retries := linesWith(out, `msg="retryhttp: retrying request"`)
			assert.Len(t, retries, tc.retries, out)
			sums := linesWith(out, `event="retryhttp: retrying request"`)
			if tc.sampling.Window == time.Second {
				assert.NotEmpty(t, sums, "a short window writes summaries as the outage goes on")
			}
			assert.LessOrEqual(t, len(retries)+suppressedCount(t, sums), 30)
		})
	}
}

// Under concurrent requests, every give-up line is either written or
// counted in exactly one summary.
func TestLogSamplingCountsExactlyUnderConcurrency(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	var buf bytes.Buffer
	p := fakePolicy(clk)
	p.MaxAttempts = 1 // one give-up line a request, no waits
	c := srv.client(&retryhttp.Transport{Policy: p, Logger: logged(&buf)})
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				resp, err := c.Get(srv.URL)
				if assert.NoError(t, err) {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	clk.Add(time.Minute)
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()

	out := buf.String()
	written := linesWith(out, `msg="retryhttp: giving up"`)
	sums := linesWith(out, "suppressed=")
	require.Len(t, sums, 1, out)
	assert.Equal(t, goroutines*each+1, len(written)+suppressedCount(t, sums))
	assert.Len(t, written, 5+1)
}

// Budget exhaustion is written once when it starts and once when the
// origin is allowed a retry again, however many give-ups come between; a
// move within a Window of the origin's latest such line waits for the
// origin's next event a Window on.
func TestLogSamplingBudgetTransitions(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if healthy.Load() {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(503)
	})
	clk := retrytest.NewClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 1})
	require.NoError(t, err)
	p := fakePolicy(clk)
	p.Budget = budget
	var buf bytes.Buffer
	c := srv.client(&retryhttp.Transport{Policy: p, Logger: logged(&buf)})
	send := func(n int) {
		for range n {
			require.NoError(t, do(t, c, clk, get(t, srv.URL)).err)
		}
	}
	send(20)
	out := buf.String()
	exhausted := linesWith(out, `msg="retryhttp: retry budget exhausted"`)
	require.Len(t, exhausted, 1, out)
	assert.Contains(t, exhausted[0], "level=WARN")
	assert.Contains(t, exhausted[0], "origin="+srv.URL)
	assert.Empty(t, linesWith(out, "recovered"))

	healthy.Store(true)
	send(10) // successes refill the budget
	healthy.Store(false)
	clk.Add(time.Minute) // a Window after the exhausted line
	send(1)              // allowed a retry again, then refused the next
	out = buf.String()
	recovered := linesWith(out, `msg="retryhttp: retry budget recovered"`)
	require.Len(t, recovered, 1, out)
	assert.Contains(t, recovered[0], "origin="+srv.URL)
	assert.Less(t, strings.Index(out, "budget exhausted"), strings.Index(out, "budget recovered"))
	assert.Len(t, linesWith(out, `msg="retryhttp: retry budget exhausted"`), 1, "exhausted again at once: within a Window of the recovery, not written yet")

	clk.Add(time.Minute)
	send(1) // the next give-up a Window on writes it, with the move it held back
	out = buf.String()
	again := linesWith(out, `msg="retryhttp: retry budget exhausted"`)
	require.Len(t, again, 2, "exhausted again after the recovery")
	assert.NotContains(t, again[1], "suppressed_changes", "one move, the one written")
}

// An origin that flaps at the edge of its Budget writes a pair of lines a
// Window, with the count of the moves between, not a pair a second.
func TestLogSamplingBudgetFlapping(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if (n.Add(1)/3)%2 == 0 { // runs of three 503s and three 200s
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	})
	clk := retrytest.NewClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 1})
	require.NoError(t, err)
	p := fakePolicy(clk)
	p.Budget = budget
	var buf bytes.Buffer
	c := srv.client(&retryhttp.Transport{Policy: p, Logger: logged(&buf)})
	start := clk.Now()
	for range 200 {
		_ = do(t, c, clk, get(t, srv.URL))
	}
	elapsed := clk.Now().Sub(start)
	out := buf.String()
	lines := func(out string) int {
		return len(linesWith(out, `msg="retryhttp: retry budget exhausted"`)) + len(linesWith(out, `msg="retryhttp: retry budget recovered"`))
	}
	assert.Equal(t, 1, lines(out), "one line in under a Window (%v), however the origin flaps", elapsed)
	clk.Add(2 * time.Minute)
	for range 6 {
		_ = do(t, c, clk, get(t, srv.URL))
	}
	out = buf.String()
	assert.Equal(t, 2, lines(out))
	counted := linesWith(out, "suppressed_changes=")
	require.Len(t, counted, 1, out)
	assert.Regexp(t, `suppressed_changes=[1-9][0-9]+`, counted[0], "the moves between are counted")
}

// A hold is written once when it starts and once when a normal answer ends
// it, however many requests it holds back or Retry-Afters renew it.
func TestLogSamplingHoldTransitions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var throttle atomic.Bool
		throttle.Store(true)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if throttle.Load() {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		var buf bytes.Buffer
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policy: retry.Policy{MaxAttempts: 1},
			Hold: retryhttp.HoldFailFast, Logger: logged(&buf)}
		send := func() {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
			if err == nil {
				resp.Body.Close()
			}
		}
		for range 3 {
			for range 10 {
				send() // one 503 with Retry-After, then held back
			}
			time.Sleep(11 * time.Second) // lapsed: the next probe renews it
		}
		out := buf.String()
		started := linesWith(out, `msg="retryhttp: hold started"`)
		require.Len(t, started, 1, out)
		assert.Contains(t, started[0], "level=WARN")
		assert.Contains(t, started[0], "origin=http://svc.test")
		assert.Empty(t, linesWith(out, "hold ended"))

		throttle.Store(false)
		time.Sleep(time.Minute) // a Window after the hold started
		for range 2 * guard.HoldProbes {
			send()
		}
		out = buf.String()
		ended := linesWith(out, `msg="retryhttp: hold ended"`)
		require.Len(t, ended, 1, out)
		assert.Contains(t, ended[0], "origin=http://svc.test")
		assert.Len(t, linesWith(out, "hold started"), 1)
	})
}
