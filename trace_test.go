package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTraceString(t *testing.T) {
	t.Parallel()
	secret := errors.New("GET https://user:hunter2@api.example/?token=abc: 503")
	cases := []struct {
		name string
		errs []error
		p    retry.Policy
		want string
	}{
		{"at once", nil, retry.Policy{}, "1 attempt, ok"},
		{"two failures", []error{errUnavailable, errUnavailable}, retry.Policy{Jitter: retry.NoJitter}, "3 attempts, waits [200ms 400ms], 600ms, ok"},
		{"exhausted", []error{secret, secret}, retry.Policy{MaxAttempts: 2, Jitter: retry.NoJitter}, "2 attempts, waits [200ms], 200ms, attempts exhausted"},
		{"permanent", []error{retry.Permanent(secret)}, retry.Policy{}, "1 attempt, permanent"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr, _ := retrytest.Do(context.Background(), retrytest.Script(c.errs...).Call, c.p)
			assert.Equal(t, c.want, tr.String())
			assert.NotContains(t, tr.String(), "hunter2")
		})
	}
}

func TestTraceLogValueHoldsNoErrorText(t *testing.T) {
	t.Parallel()
	secret := errors.New("Authorization: Bearer s3cr3t")
	tr, err := retrytest.Do(context.Background(), retrytest.Always(secret).Call, retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter})
	require.ErrorIs(t, err, secret)

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("gave up", "trace", tr)
	assert.NotContains(t, buf.String(), "s3cr3t")

	var line struct {
		Trace struct {
			Attempts int      `json:"attempts"`
			Waits    []int64  `json:"waits"`
			Elapsed  int64    `json:"elapsed"`
			Result   string   `json:"result"`
			Reasons  []string `json:"reasons"`
		} `json:"trace"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	assert.Equal(t, 3, line.Trace.Attempts)
	assert.Equal(t, []int64{int64(200 * time.Millisecond), int64(400 * time.Millisecond)}, line.Trace.Waits)
	assert.Equal(t, int64(600*time.Millisecond), line.Trace.Elapsed)
	assert.Equal(t, "attempts exhausted", line.Trace.Result)
	assert.Equal(t, []string{"error", "error", "error"}, line.Trace.Reasons)
}

func TestZeroTrace(t *testing.T) {
	t.Parallel()
	var tr retry.Trace
	assert.Equal(t, 0, tr.Attempts())
	assert.Nil(t, tr.Delays())
	assert.Equal(t, time.Duration(0), tr.Elapsed())
	assert.Equal(t, retry.Attempt{}, tr.Last())
	for range tr.All() {
		t.Fatal("a zero Trace has no attempts")
	}
}

func TestTraceAllStopsWhenAsked(t *testing.T) {
	t.Parallel()
	tr, _ := retrytest.Do(context.Background(), retrytest.Script(errUnavailable, errUnavailable).Call, retry.Policy{})
	var seen []int
	for a := range tr.All() {
		seen = append(seen, a.Number)
		if a.Number == 2 {
			break
		}
	}
	assert.Equal(t, []int{1, 2}, seen)
}
