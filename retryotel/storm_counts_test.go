package retryotel_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// lockedBuffer is a log sink that a breaker's timer may write to too.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var suppressedRe = regexp.MustCompile(`\bsuppressed=(\d+)\b`)

// logEvents counts the events of msg in the log out: the lines written,
// plus the counts of the summaries that stand for the lines suppressed.
func logEvents(t *testing.T, out, msg string) (written, suppressed int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, `msg="`+msg+`"`):
			written++
		case strings.Contains(line, `event="`+msg+`"`):
			m := suppressedRe.FindStringSubmatch(line)
			require.NotNil(t, m, line)
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			suppressed += n
		}
	}
	return written, suppressed
}

// A failing origin, through a Transport with a sampled Logger, a breaker
// per origin, an Observer and a Recorder: the lines written plus the
// counts of the summaries equal what the metrics count, retries, calls
// given up and breaker openings alike.
func TestSummaryCountsEqualMetricCounts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(srv.Close)
	s := newSink(t)
	rec := retrydebug.NewRecorder(0, 0)
	clk := retrytest.NewAutoClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 20, OpenFor: 10 * time.Second, Clock: clk}, 10)
	require.NoError(t, err)
	reg, err := s.obs.ObserveBreakers("origins", bs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Unregister() })
	var logs lockedBuffer
	tr := &retryhttp.Transport{
		Base:   srv.Client().Transport,
		Policy: retry.Policy{MaxAttempts: 3, Clock: clk},
		Guards: guard.Keyed{Breakers: bs},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnDone: func(ctx context.Context, sum retryhttp.Summary) {
			s.obs.RecordHTTP(ctx, sum)
			rec.RecordHTTP(ctx, sum)
		},
	}
	c := &http.Client{Transport: tr}
	send := func() {
		resp, err := c.Get(srv.URL)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	for range 500 {
		send()
		clk.Add(time.Second) // time for the breaker to go half-open now and then
	}
	clk.Add(2 * time.Minute) // every window ends
	send()                   // and the next line writes their summaries

	out := logs.String()
	retried, retriedHidden := logEvents(t, out, "retryhttp: retrying request")
	gaveUp, gaveUpHidden := logEvents(t, out, "retryhttp: giving up")
	require.Positive(t, retriedHidden, "the sampler suppressed retries")
	require.Positive(t, gaveUpHidden)
	assert.Less(t, len(strings.Split(out, "\n")), 200, "the log did not flood")

	m := s.metrics(t)
	retries, ok := m[retryotel.RetriesName].(metricdata.Histogram[int64])
	require.True(t, ok)
	var retrySum int64
	for _, p := range retries.DataPoints {
		retrySum += p.Sum
	}
	calls, ok := m[retryotel.CallsName].(metricdata.Sum[int64])
	require.True(t, ok)
	var failed int64
	for _, p := range calls.DataPoints {
		if v, _ := p.Attributes.Value(retryotel.OutcomeKey); v.AsString() != "ok" {
			failed += p.Value
		}
	}
	assert.EqualValues(t, retrySum, retried+retriedHidden, "retries: lines %d + suppressed %d", retried, retriedHidden)
	assert.EqualValues(t, failed, gaveUp+gaveUpHidden, "given up: lines %d + suppressed %d", gaveUp, gaveUpHidden)
	assert.EqualValues(t, 501, failed)

	var debugRetries, debugCalls int64
	for _, op := range rec.Snapshot().Operations {
		debugRetries += op.Retries
		debugCalls += op.Calls
	}
	assert.Equal(t, retrySum, debugRetries, "the Recorder counts what the Observer counts")
	assert.EqualValues(t, 501, debugCalls)

	opened, _ := logEvents(t, out, "retryhttp: circuit breaker opened")
	require.Positive(t, opened)
	assert.EqualValues(t, opened, int64Points(t, s, retryotel.BreakerTransitionsName)[`retry.breaker.state=open,retry.guard.key=`+srv.URL+`,retry.guard.name=origins`],
		"breaker openings: lines and metric")
}
