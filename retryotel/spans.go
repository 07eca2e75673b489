package retryotel

import (
	"context"
	"net"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stormguard/retry"
)

// The attributes of a call's span and of its attempt events, besides
// OperationKey and OutcomeKey.
const (
	// AttemptsKey on the span: how many attempts the call made.
	AttemptsKey = attribute.Key("retry.attempts")
	// AttemptNumberKey on an attempt event: 1 for the first attempt.
	AttemptNumberKey = attribute.Key("retry.attempt.number")
	// AttemptWaitKey on an attempt event: the wait before it, in seconds.
	AttemptWaitKey = attribute.Key("retry.attempt.wait")
	// AttemptOutcomeKey on an attempt event: "ok", "retried" (it failed
	// and another attempt followed) or "failed" (it failed and was the
	// last).
	AttemptOutcomeKey = attribute.Key("retry.attempt.outcome")
	// AttemptReasonKey on an attempt event that failed: the Classifier's
	// short, fixed Reason ("503 Service Unavailable"), never an error's
	// message.
	AttemptReasonKey = attribute.Key("retry.attempt.reason")
	// statusCodeKey is the semantic conventions' HTTP response status.
	statusCodeKey = attribute.Key("http.response.status_code")
)

// AttemptEventName is the name of a span's attempt events.
const AttemptEventName = "retry.attempt"

// internal is the kind of every call's span: the call is the caller's own
// work; an instrumented HTTP Base makes the client spans of its attempts.
var internal = trace.WithSpanKind(trace.SpanKindInternal)

// callInfo is what a call's span carries besides its Trace: for an HTTP
// request, its method, origin and status; for a gRPC call, its method and
// status code.
type callInfo struct {
	http   bool
	grpc   bool
	method string
	origin string
	status int
	code   uint32
}

// setAttributes sets the attributes of info on span.
func (info callInfo) setAttributes(span trace.Span) {
	if info.grpc {
		span.SetAttributes(info.grpcAttributes()...)
		return
	}
	if !info.http {
		return
	}
	span.SetAttributes(methodKey.String(httpMethod(info.method)))
	if host := hostOf(info.origin); host != "" {
		span.SetAttributes(serverAddressKey.String(host))
	}
	if info.status != 0 {
		span.SetAttributes(statusCodeKey.Int(info.status))
	}
}

// hostOf returns the host of an origin, scheme://host[:port], without its
// port: the semantic conventions' server.address.
func hostOf(origin string) string {
	_, host, ok := strings.Cut(origin, "://")
	if !ok {
		return ""
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return strings.Trim(host, "[]")
}

// recordSpan records the span of one call. The hook runs when the call has
// ended: the span is the live one that [Observer.Transport] started before
// the first attempt, if ctx has it, or else one made after the fact, which
// takes its times from the Trace.
func (ins *instruments) recordSpan(ctx context.Context, op *operation, oc int, t *retry.Trace, info callInfo) {
	if ins.tracer == nil {
		return
	}
	if live := liveSpanOf(ctx, ins); live != nil {
		// Transport ends it when RoundTrip returns, right after this hook.
		if span := live.span; span.IsRecording() {
			start, _ := spanTimes(t)
			span.SetName(op.name)
			fillSpan(span, op, oc, t, info, start)
		}
		return
	}
	start, end := spanTimes(t)
	_, span := ins.tracer.Start(ctx, op.name, trace.WithTimestamp(start), internal)
	if !span.IsRecording() { // no SDK, or not sampled: pay for nothing more
		span.End()
		return
	}
	fillSpan(span, op, oc, t, info, start)
	span.End(trace.WithTimestamp(end))
}

// fillSpan sets a call's attributes, attempt events and status on span.
// start stands for the time of an attempt the Trace did not time.
func fillSpan(span trace.Span, op *operation, oc int, t *retry.Trace, info callInfo, start time.Time) {
	n := t.Attempts()
	span.SetAttributes(OperationKey.String(op.name), OutcomeKey.String(outcomes[oc]), AttemptsKey.Int(n))
	info.setAttributes(span)
	for a := range t.All() {
		at := a.Start
		if at.IsZero() {
			at = start
		}
		outcome := "ok"
		switch {
		case a.Err != nil && a.Number < n:
			outcome = "retried"
		case a.Err != nil:
			outcome = "failed"
		}
		attrs := []attribute.KeyValue{
			AttemptNumberKey.Int(a.Number),
			AttemptWaitKey.Float64(a.Wait.Seconds()),
			AttemptOutcomeKey.String(outcome),
		}
		if a.Err != nil && a.Reason != "" {
			attrs = append(attrs, AttemptReasonKey.String(a.Reason))
		}
		span.AddEvent(AttemptEventName, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	}
	if t.Stop() != retry.StopSuccess {
		// The outcome, never the error's text, which may quote a URL or a
		// secret: the attempt events carry the fixed reasons.
		span.SetStatus(codes.Error, outcomes[oc])
	}
}

// spanTimes returns when a call began and ended, as far as its Trace
// knows: from the first attempt's start, or, when Do did not read the
// clock then (see retry.Attempt.Start), the end less Trace.Elapsed; to the
// end of the last attempt, or now if that was not timed either.
func spanTimes(t *retry.Trace) (start, end time.Time) {
	last := t.Last()
	if last.Start.IsZero() {
		end = time.Now()
	} else {
		end = last.Start.Add(last.Duration)
	}
	for a := range t.All() {
		start = a.Start
		break
	}
	if start.IsZero() {
		start = end.Add(-t.Elapsed())
	}
	return start, end
}
