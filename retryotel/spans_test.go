package retryotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// attrs returns kvs as a map of emitted values.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// A call is one span, with an event per attempt that carries its number,
// its wait and its outcome; its times are the Trace's.
func TestSpanPerCallWithAttemptEvents(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	clock := retrytest.NewAutoClock()
	p := retry.Policy{
		MaxAttempts: 3, Jitter: retry.NoJitter, Clock: clock,
		MaxElapsed: time.Minute, // so that Do times the first attempt too
		OnDone:     s.obs.OnDone("inventory.get"),
	}
	began := clock.Now()
	tr, _ := retrytest.Do(context.Background(), retrytest.Script(errUnavailable, errUnavailable).Call, p)

	spans := s.spans.Ended()
	require.Len(t, spans, 1)
	sp := spans[0]
	assert.Equal(t, "inventory.get", sp.Name())
	assert.Equal(t, trace.SpanKindInternal, sp.SpanKind())
	assert.Equal(t, map[string]string{"retry.operation": "inventory.get", "retry.outcome": "ok", "retry.attempts": "3"}, attrs(sp.Attributes()))
	assert.Equal(t, codes.Unset, sp.Status().Code)
	assert.Equal(t, began, sp.StartTime(), "the span starts with the first attempt")
	assert.Equal(t, began.Add(tr.Elapsed()), sp.EndTime())

	events := sp.Events()
	require.Len(t, events, 3)
	want := []map[string]string{
		{"retry.attempt.number": "1", "retry.attempt.wait": "0", "retry.attempt.outcome": "retried", "retry.attempt.reason": "error"},
		{"retry.attempt.number": "2", "retry.attempt.wait": "0.2", "retry.attempt.outcome": "retried", "retry.attempt.reason": "error"},
		{"retry.attempt.number": "3", "retry.attempt.wait": "0.4", "retry.attempt.outcome": "ok"},
	}
	at := []time.Time{began, began.Add(200 * time.Millisecond), began.Add(600 * time.Millisecond)}
	for i, e := range events {
		assert.Equal(t, "retry.attempt", e.Name)
		assert.Equal(t, want[i], attrs(e.Attributes), "event %d", i)
		assert.Equal(t, at[i], e.Time, "event %d at its attempt's start", i)
	}
}

// A call that fails is an Error span described by its outcome, the last
// attempt "failed"; no error text reaches the span.
func TestSpanOfAFailedCall(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	p := retry.Policy{MaxAttempts: 2, OnDone: s.obs.OnDone("payments.charge")}
	_, err := retrytest.Do(context.Background(), retrytest.Always(errors.New(secret)).Call, p)
	require.ErrorContains(t, err, secret)

	sp := s.spans.Ended()[0]
	assert.Equal(t, codes.Error, sp.Status().Code)
	assert.Equal(t, "attempts_exhausted", sp.Status().Description)
	events := sp.Events()
	require.Len(t, events, 2)
	assert.Equal(t, "retried", attrs(events[0].Attributes)["retry.attempt.outcome"])
	assert.Equal(t, "failed", attrs(events[1].Attributes)["retry.attempt.outcome"])
	assertNoSecret(t, sp)
}

// assertNoSecret checks every text of a span.
func assertNoSecret(t *testing.T, sp sdktrace.ReadOnlySpan) {
	t.Helper()
	texts := []string{sp.Name(), sp.Status().Description}
	for _, v := range attrs(sp.Attributes()) {
		texts = append(texts, v)
	}
	for _, e := range sp.Events() {
		texts = append(texts, e.Name)
		for _, v := range attrs(e.Attributes) {
			texts = append(texts, v)
		}
	}
	for _, text := range texts {
		assert.NotContains(t, text, secret)
	}
}

// The span is a child of the caller's span, from the ctx OnDone gets.
func TestSpanParentIsTheCaller(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
	_, _ = retrytest.Do(ctx, retrytest.Script().Call, retry.Policy{OnDone: s.obs.OnDone("cache.get")})
	parent.End()
	sp := s.spans.Ended()[0]
	assert.Equal(t, parent.SpanContext().SpanID(), sp.Parent().SpanID())
	assert.Equal(t, parent.SpanContext().TraceID(), sp.SpanContext().TraceID())
}

// A call whose first attempt Do did not time is a span that ends when the
// hook runs and lasts the Trace's Elapsed; its first event is at its start.
func TestSpanOfAnUntimedCall(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	before := time.Now()
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	s.obs.OnDone("cache.get")(context.Background(), tr, nil)
	sp := s.spans.Ended()[0]
	assert.False(t, sp.EndTime().Before(before))
	assert.Equal(t, sp.StartTime(), sp.EndTime(), "a first success that Do did not time lasts 0")
	assert.Equal(t, sp.StartTime(), sp.Events()[0].Time)
}

// Without an SDK (a noop TracerProvider), only the metrics are recorded.
func TestMetricsWithoutTracing(t *testing.T) {
	t.Parallel()
	s := newSink(t, retryotel.WithTracerProvider(noop.NewTracerProvider()))
	_, _ = retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{OnDone: s.obs.OnDone("cache.get")})
	assert.Empty(t, s.spans.Ended())
	assert.Len(t, points(t, s.metrics(t)[retryotel.CallsName]), 1)
}
