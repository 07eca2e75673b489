// Package retryotel records the calls of package retry, of package
// retryhttp and of package retrygrpc as OpenTelemetry metrics and spans.
//
// An [Observer] is wired in one line, to a retry.Policy or to a
// retryhttp.Transport, and in one hook to the retrygrpc interceptors:
//
//	obs, err := retryotel.New() // the global MeterProvider and TracerProvider
//	p.OnDone = obs.OnDone("inventory.get")
//	transport.OnDone = obs.RecordHTTP
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		obs.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
//	})
//
// [Observer.RecordGRPC] takes a Summary's parts rather than the Summary, so
// that a program that uses this package for HTTP alone does not build grpc.
//
// # Metrics
//
// The metrics are counted per call, not per attempt, in the shape of gRPC's
// retry metrics (gRFC A96, "OTel Metrics for Retries", which records
// grpc.client.call.retries and grpc.client.call.retry_delay once per call),
// with names and units after the OpenTelemetry semantic conventions:
//
//	retry.calls             counter    {call}     calls, by outcome
//	retry.call.attempts     histogram  {attempt}  attempts per call, the first included
//	retry.call.retries      histogram  {retry}    retries per call; not recorded for a call without retries
//	retry.call.retry_delay  histogram  s          time spent with no attempt running (not hedge delays); likewise
//	retry.call.duration     histogram  s          the call's retry.Trace.Elapsed
//
// Each carries two attributes and no other: retry.operation, the name given
// to OnDone, a request's route (retryhttp.WithRoute) or else its method
// ("GET"; "HTTP" for a method the HTTP semantic conventions do not know),
// never its host or path, or a gRPC call's method
// ("pkg.Service/Method"), and retry.outcome, one value per retry.StopReason:
// ok, not_retried, attempts_exhausted, deadline, budget_exhausted,
// context_done, deferred, panicked, throttled, breaker_open, stale. Never a URL with ids, never an error's
// text. An Observer tells apart at most 100 operation names (see
// [WithMaxOperations]) and counts the rest as "_OTHER", so the number of
// series is bounded by design.
//
// A call's duration is its Trace's Elapsed, first attempt included: Do
// reads the clock at the start of a call that an OnDone observes (see
// retry.Attempt.Start).
//
// # Traces
//
// Each call is one span, named after its operation ("_OTHER" past the cap,
// as in the metrics, so that span names are bounded too), with one event per
// attempt (retry.attempt: retry.attempt.number, retry.attempt.wait in
// seconds, retry.attempt.outcome ok, retried or failed, and the fixed
// retry.attempt.reason of a failure). The span's status is Error for any
// outcome but ok, described by the outcome, never by the error's text.
//
// Attempts are events, not child spans, for three reasons. The hook runs
// once the call has ended, so the span is built after the fact from the
// Trace (its start is the first attempt's, or its end less the Trace's
// Elapsed); child spans would be made up the same way and add nothing but
// cost. An HTTP attempt already has a span of its own when the Transport's
// Base is instrumented (otelhttp.NewTransport), with the network's real
// timing; a second span per attempt would duplicate it. And events keep a
// call that retried 64 times one span, not 65.
//
// For an HTTP client, wrap the retryhttp.Transport with [Observer.Transport]
// so that the call's span starts before the first attempt and the spans of
// the attempts (otelhttp's, from an instrumented Base) are its children:
// one trace then shows the request and each attempt beneath it.
//
//	client := &http.Client{Transport: obs.Transport(&retryhttp.Transport{
//		Base:   otelhttp.NewTransport(http.DefaultTransport),
//		OnDone: obs.RecordHTTP,
//	})}
//
// Otherwise the span is started when the call ends, and spans made during
// its attempts are its siblings under the caller's span, not its children.
//
// Wire each retry loop to the Observer once. A retryhttp.Transport goes
// through its OnDone (obs.RecordHTTP), not also through its Policy's OnDone,
// which sees the same request: with both, each request is counted twice,
// under two names. Policy.OnDone is for retry.Do.
//
// Calls inside an outer retry loop end with outcome "deferred": the outer
// loop's call counts the retry.
//
// # Idempotency keys
//
// [Observer.RecordIdempotency], wired to idempotency.Options.OnDone,
// counts the keyed requests a server's idempotency middleware answered:
//
//	idempotency.requests        counter    {request}  by http.route and idempotency.outcome
//	idempotency.store.duration  histogram  s          each request's time in the store; likewise
//
// The outcome is the idempotency.Outcome: executed, replayed, in_flight
// (409), mismatch (422), store_failed (503), lease_lost, released,
// rejected. The route is the http.ServeMux pattern, never the key.
//
// # Load shedding
//
// [Observer.ObserveShedLimiter] reports a server's shed.Limiter, read at
// each collection, by shed.name:
//
//	shed.limit      gauge    {request}  the limit on requests in flight
//	shed.in_flight  gauge    {request}  requests admitted and not done
//	shed.queued     gauge    {request}  requests waiting for a slot
//	shed.requests   counter  {request}  requests decided, by shed.outcome: admitted or shed
//
// References: [gRFC A96] for the per-call retry metrics, [gRFC A66] for
// gRPC's per-call metrics it builds on, and the OpenTelemetry [metric
// naming] and [HTTP metrics] conventions (units, histogram buckets, "_OTHER"
// for a value outside a bounded set).
//
// [gRFC A96]: https://github.com/grpc/proposal/blob/master/A96-retry-otel-stats.md
// [gRFC A66]: https://github.com/grpc/proposal/blob/master/A66-otel-stats.md
// [metric naming]: https://opentelemetry.io/docs/specs/semconv/general/metrics/
// [HTTP metrics]: https://opentelemetry.io/docs/specs/semconv/http/http-metrics/
package retryotel
