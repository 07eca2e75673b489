package retryotel_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// clientSpans is an instrumented Base, as otelhttp.NewTransport is: each
// attempt gets a client span, a child of the span in the attempt's ctx.
type clientSpans struct {
	tracer trace.Tracer
	rt     http.RoundTripper
	ended  chan<- struct{} // if not nil, told of each span's end
}

func (c clientSpans) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := c.tracer.Start(req.Context(), "HTTP "+req.Method, trace.WithSpanKind(trace.SpanKindClient))
	defer func() {
		span.End()
		if c.ended != nil {
			c.ended <- struct{}{}
		}
	}()
	return c.rt.RoundTrip(req.WithContext(ctx))
}

// byName returns the ended spans of s named name.
func byName(s *sink, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	return out
}

// get sends a GET of url through client under ctx and reads the answer.
func getThrough(t *testing.T, client *http.Client, ctx context.Context, url string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// With Observer.Transport around the retryhttp.Transport, the call's span
// starts before the first attempt, and each attempt's client span is its
// child, in the caller's trace: one trace shows the call and its attempts.
func TestTransportMakesAttemptsChildrenOfTheCall(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	tracer := s.tracers.Tracer("test")
	rt := &retryhttp.Transport{
		Base:   clientSpans{tracer: tracer, rt: retrytest.HandlerTransport(&flakyAPI{})},
		Policy: retry.Policy{MaxAttempts: 3, Clock: retrytest.NewAutoClock()},
		OnDone: s.obs.RecordHTTP,
	}
	client := &http.Client{Transport: s.obs.Transport(rt)}
	ctx, parent := tracer.Start(context.Background(), "handler")
	status := getThrough(t, client, retryhttp.WithRoute(ctx, "GET /users/{id}/orders"), "http://api.example/users/8412/orders?key="+secret)
	parent.End()
	require.Equal(t, http.StatusOK, status)

	calls := byName(s, "GET /users/{id}/orders")
	require.Len(t, calls, 1)
	call := calls[0]
	attempts := byName(s, "HTTP GET")
	require.Len(t, attempts, 2, "a 503, then a 200")
	for _, a := range attempts {
		assert.Equal(t, call.SpanContext().SpanID(), a.Parent().SpanID(), "an attempt is a child of the call")
		assert.Equal(t, call.SpanContext().TraceID(), a.SpanContext().TraceID())
		assert.False(t, a.StartTime().Before(call.StartTime()), "the call's span starts before its attempts")
		assert.False(t, a.EndTime().After(call.EndTime()))
	}
	assert.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID(), "the call is a child of the caller's span")
	assert.Equal(t, map[string]string{
		"retry.operation": "GET /users/{id}/orders", "retry.outcome": "ok", "retry.attempts": "2",
		"http.request.method": "GET", "server.address": "api.example", "http.response.status_code": "200",
	}, attrs(call.Attributes()))
	assert.Len(t, call.Events(), 2)
	assert.Len(t, s.spans.Ended(), 4, "handler, call, two attempts: no second span of the call")
	assertNoSecret(t, call)

	// Its metrics are those of the same request without the wrapper.
	assert.Equal(t, map[string][2]float64{"ok": {1, 1}}, byOutcome(t, s.metrics(t)[retryotel.CallsName]))
}

// A hedged request's copies are children of the call's span too.
func TestTransportHedgedAttemptsAreChildren(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	tracer := s.tracers.Tracer("test")
	slowFirst := make(chan struct{})
	ended := make(chan struct{}, 2)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Retry-Attempt") == "1" {
			select { // the primary is slow: the hedge answers first
			case <-slowFirst:
			case <-r.Context().Done():
			}
			return
		}
		close(slowFirst)
		w.WriteHeader(http.StatusOK)
	})
	rt := &retryhttp.Transport{
		Base:          clientSpans{tracer: tracer, rt: retrytest.HandlerTransport(api), ended: ended},
		Policy:        retry.Policy{MaxAttempts: 2},
		Hedger:        &retry.Hedger{Delay: time.Millisecond},
		AttemptHeader: "Retry-Attempt",
		OnDone:        s.obs.RecordHTTP,
	}
	client := &http.Client{Transport: s.obs.Transport(rt)}
	require.Equal(t, http.StatusOK, getThrough(t, client, context.Background(), "http://api.example/items"))

	<-ended // the losing copy's span ends when its attempt does, after the call
	<-ended
	calls := byName(s, "GET")
	require.Len(t, calls, 1)
	attempts := byName(s, "HTTP GET")
	require.Len(t, attempts, 2)
	for _, a := range attempts {
		assert.Equal(t, calls[0].SpanContext().SpanID(), a.Parent().SpanID())
	}
}

// Without RecordHTTP as the Transport's OnDone, the wrapper's span still
// ends, named by the method, with the status, and says when the request
// failed; a panic below it still ends it.
func TestTransportWithoutRecordHTTP(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	rt := &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(&flakyAPI{}),
		Policy: retry.Policy{MaxAttempts: 1},
	}
	client := &http.Client{Transport: s.obs.Transport(rt)}
	require.Equal(t, http.StatusServiceUnavailable, getThrough(t, client, context.Background(), "http://api.example/down"))
	spans := s.spans.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "GET", spans[0].Name())
	assert.Equal(t, "503", attrs(spans[0].Attributes())["http.response.status_code"])

	boom := s.obs.Transport(roundTripFunc(func(*http.Request) (*http.Response, error) { panic("boom") }))
	req, err := http.NewRequest(http.MethodGet, "http://api.example/", nil)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "boom", func() { _, _ = boom.RoundTrip(req) })
	assert.Len(t, s.spans.Ended(), 2, "the span ends on a panic too")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A retry loop below the wrapped Transport (here a second Transport in its
// Base, wired to the same Observer) does not take the request's span: it
// makes its own, beneath the attempt that ran it, and the request's span is
// the outer Transport's.
func TestTransportNestedCallsKeepTheirOwnSpans(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	tracer := s.tracers.Tracer("test")
	inner := &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(&flakyAPI{}),
		Policy: retry.Policy{MaxAttempts: 3, Clock: retrytest.NewAutoClock()},
		OnDone: s.obs.RecordHTTP,
	}
	outer := &retryhttp.Transport{
		Base:   clientSpans{tracer: tracer, rt: inner},
		Policy: retry.Policy{MaxAttempts: 3, Clock: retrytest.NewAutoClock()},
		OnDone: s.obs.RecordHTTP,
	}
	client := &http.Client{Transport: s.obs.Transport(outer)}
	require.Equal(t, http.StatusOK, getThrough(t, client, retryhttp.WithRoute(context.Background(), "orders.list"), "http://api.example/orders"))

	attempts := byName(s, "HTTP GET")
	require.Len(t, attempts, 2, "a 503 the outer Transport retried, then a 200")
	isAttempt := map[trace.SpanID]bool{}
	for _, a := range attempts {
		isAttempt[a.SpanContext().SpanID()] = true
	}
	var outerCalls, innerCalls []sdktrace.ReadOnlySpan
	for _, c := range byName(s, "orders.list") {
		if isAttempt[c.Parent().SpanID()] {
			innerCalls = append(innerCalls, c)
		} else {
			outerCalls = append(outerCalls, c)
		}
	}
	require.Len(t, outerCalls, 1)
	require.Len(t, innerCalls, 2, "one inner call beneath each outer attempt")
	for _, a := range attempts {
		assert.Equal(t, outerCalls[0].SpanContext().SpanID(), a.Parent().SpanID())
	}
	assert.Equal(t, "deferred", attrs(innerCalls[0].Attributes())["retry.outcome"], "the inner Transport leaves retrying to the outer one")
	assert.Equal(t, "2", attrs(outerCalls[0].Attributes())["retry.attempts"])
	assert.Equal(t, "ok", attrs(outerCalls[0].Attributes())["retry.outcome"])
}
