package retryotel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// An Observer wired to a Policy in one line records each call of Do: here
// with an in-memory reader, in a service with the global providers
// (retryotel.New() with no options).
func ExampleObserver_OnDone() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}

	p := retry.Policy{OnDone: obs.OnDone("inventory.get")}
	calls := 0
	getInventory := func(ctx context.Context) error {
		calls++
		if calls%3 != 0 {
			return errors.New("503 service unavailable")
		}
		return nil
	}
	for range 10 {
		// In a service: retry.Do(ctx, getInventory, p). retrytest.Do runs the
		// same loop on a fake clock, so that the example waits no real time.
		_, _ = retrytest.Do(context.Background(), getInventory, p)
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			fmt.Println(m.Name, d.DataPoints[0].Value)
		case metricdata.Histogram[int64]:
			fmt.Println(m.Name, "sum", d.DataPoints[0].Sum)
		}
	}
	// Output:
	// retry.calls 10
	// retry.call.attempts sum 30
	// retry.call.retries sum 20
}

// An Observer wired to a retryhttp.Transport in one line makes a span per
// request, named by its route, with an event per attempt.
func ExampleObserver_RecordHTTP() {
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracers.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithTracerProvider(tracers))
	if err != nil {
		fmt.Println(err)
		return
	}

	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable) // always down
	}))
	defer api.Close()
	transport := &retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 2, Clock: retrytest.NewAutoClock()}}
	transport.OnDone = obs.RecordHTTP
	defer transport.CloseIdleConnections()

	ctx := retryhttp.WithRoute(context.Background(), "GET /users/{id}/orders")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/users/8412/orders", nil)
	if resp, err := (&http.Client{Transport: transport}).Do(req); err == nil {
		resp.Body.Close()
	}

	span := spans.Ended()[0]
	fmt.Println(span.Name(), span.Status().Code, span.Status().Description, len(span.Events()), "attempts")
	// Output:
	// GET /users/{id}/orders Error attempts_exhausted 2 attempts
}

// New with no options records with the global providers, as set by the
// service's OpenTelemetry setup; one Observer serves every Policy and
// Transport.
func ExampleNew() {
	obs, err := retryotel.New()
	if err != nil {
		panic(err)
	}
	inventory := retry.Policy{MaxAttempts: 3, OnDone: obs.OnDone("inventory.get")}
	client := &http.Client{Transport: &retryhttp.Transport{OnDone: obs.RecordHTTP}}
	_, _ = inventory, client
}

// An Observer records gRPC calls through retrygrpc.WithOnDone: one span per
// call, named by its method, with the call's status code.
func ExampleObserver_RecordGRPC() {
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracers.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithTracerProvider(tracers))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Installed with grpc.WithChainUnaryInterceptor on a ClientConn.
	_ = retrygrpc.UnaryClientInterceptor(retry.Policy{}, retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
		obs.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
	}))

	// What that hook does for a call that was retried once, then ended
	// UNAVAILABLE (code 14).
	tr, _ := retrytest.Do(context.Background(), retrytest.Always(errors.New("unavailable")).Call, retry.Policy{MaxAttempts: 2})
	obs.RecordGRPC(context.Background(), "/inventory.v1.Stock/Get", 14, tr)

	span := spans.Ended()[0]
	fmt.Println(span.Name(), span.Status().Description, len(span.Events()), "attempts")
	// Output:
	// inventory.v1.Stock/Get attempts_exhausted 2 attempts
}

// An Observer wired to an idempotency middleware in one line counts its
// keyed requests per route, by outcome. Here the middleware's report of a
// 409 (the same request still in flight) is fed by hand.
func ExampleObserver_RecordIdempotency() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := idempotency.Options{OnDone: obs.RecordIdempotency}

	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	r.Pattern = "POST /orders" // as the http.ServeMux sets it
	opts.OnDone(r, idempotency.Summary{Outcome: idempotency.OutcomeInFlight, Status: 409, StoreCalls: 1})

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if d, ok := m.Data.(metricdata.Sum[int64]); ok {
			route, _ := d.DataPoints[0].Attributes.Value(retryotel.RouteKey)
			outcome, _ := d.DataPoints[0].Attributes.Value(retryotel.IdempotencyOutcomeKey)
			fmt.Println(m.Name, route.AsString(), outcome.AsString(), d.DataPoints[0].Value)
		}
	}
	// Output:
	// idempotency.requests POST /orders in_flight 1
}

// Observer.Transport around a retryhttp.Transport starts each request's
// span before its first attempt, so that the attempts' spans, made by an
// instrumented Base such as otelhttp.NewTransport, are its children.
func ExampleObserver_Transport() {
	spans := tracetest.NewSpanRecorder()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracers.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithTracerProvider(tracers))
	if err != nil {
		fmt.Println(err)
		return
	}

	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer api.Close()
	// In a service: Base: otelhttp.NewTransport(http.DefaultTransport).
	attempts := tracers.Tracer("otelhttp")
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ctx, span := attempts.Start(req.Context(), "HTTP GET")
		defer span.End()
		return http.DefaultTransport.RoundTrip(req.WithContext(ctx))
	})
	client := &http.Client{Transport: obs.Transport(&retryhttp.Transport{Base: base, OnDone: obs.RecordHTTP})}
	defer client.CloseIdleConnections()

	if resp, err := client.Get(api.URL + "/items"); err == nil {
		resp.Body.Close()
	}

	ended := spans.Ended()
	attempt, call := ended[0], ended[1]
	fmt.Println(call.Name(), "is the parent of", attempt.Name()+":", attempt.Parent().SpanID() == call.SpanContext().SpanID())
	// Output:
	// GET is the parent of HTTP GET: true
}
