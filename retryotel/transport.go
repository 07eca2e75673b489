package retryotel

import (
	"context"
	"net/http"
	"sync/atomic"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Transport returns an http.RoundTripper that starts the span of each
// request before rt sends it, so that the spans of its attempts are the
// span's children: wrap a retryhttp.Transport whose Base is instrumented,
// and whose OnDone is this Observer's RecordHTTP, and one trace shows the
// request and each of its attempts beneath it.
//
//	client := &http.Client{Transport: obs.Transport(&retryhttp.Transport{
//		Base:   otelhttp.NewTransport(http.DefaultTransport),
//		OnDone: obs.RecordHTTP,
//	})}
//
// The span is the one RecordHTTP fills when the request ends, with the
// name, attributes and attempt events it gives any call, and Transport
// ends it when RoundTrip returns; its start and end are the request's own,
// on the real clock. Without this wrapper RecordHTTP makes the span after
// the fact, and the attempts' spans are its siblings. If rt's OnDone is
// not RecordHTTP, the span has the request's method as its name, its
// status, and Error if RoundTrip failed. With a noop TracerProvider,
// Transport returns rt itself.
func (o *Observer) Transport(rt http.RoundTripper) http.RoundTripper {
	if o.tracer == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &tracingTransport{o: o, rt: rt}
}

// tracingTransport is what Observer.Transport returns.
type tracingTransport struct {
	o  *Observer
	rt http.RoundTripper
}

// liveKey is the ctx key of a request's live span: one per instruments,
// so that two Observers never fill each other's spans.
type liveKey struct{ ins *instruments }

// liveSpan is a request's span, started by Transport, the ctx it gave the
// request, and whether a hook has filled the span already.
type liveSpan struct {
	span   trace.Span
	ctx    context.Context
	filled atomic.Bool
}

// liveSpanOf returns the live span that ins started for the request whose
// ctx is ctx itself, if no hook has filled it yet, and marks it filled; or
// nil. The hooks of the wrapped Transport get the request's own ctx; a
// call made below it (a nested Transport, a retry.Do in its Base) gets a
// ctx derived from an attempt's, and so makes a span of its own, beneath
// its attempt. Only the first hook fills the span.
func liveSpanOf(ctx context.Context, ins *instruments) *liveSpan {
	live, _ := ctx.Value(liveKey{ins}).(*liveSpan)
	if live == nil || live.ctx != ctx || live.filled.Swap(true) {
		return nil
	}
	return live
}

// RoundTrip starts the request's span, has rt send the request under it,
// and ends the span when rt returns.
func (t *tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := t.o.tracer.Start(req.Context(), httpOperation(req.Method), internal)
	if !span.IsRecording() {
		span.End()
		return t.rt.RoundTrip(req)
	}
	live := &liveSpan{span: span}
	live.ctx = context.WithValue(ctx, liveKey{&t.o.instruments}, live)
	defer span.End() // a panic in rt included
	resp, err := t.rt.RoundTrip(req.WithContext(live.ctx))
	if !live.filled.Load() { // no RecordHTTP: what RoundTrip says
		if resp != nil {
			span.SetAttributes(statusCodeKey.Int(resp.StatusCode))
		}
		if err != nil {
			span.SetStatus(codes.Error, "request failed")
		}
	}
	return resp, err
}

// CloseIdleConnections closes the idle connections of rt, if it has a
// CloseIdleConnections method, as http.Client.CloseIdleConnections expects.
func (t *tracingTransport) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
