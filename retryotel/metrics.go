package retryotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stormguard/retry"
)

// The metrics, counted per call, not per attempt, in the shape of gRPC's
// retry metrics (gRFC A96: grpc.client.call.retries and
// grpc.client.call.retry_delay), with the names and units the OpenTelemetry
// semantic conventions ask for.
const (
	// CallsName counts calls, by operation and outcome.
	CallsName = "retry.calls"
	// AttemptsName is a histogram of the attempts each call made, the
	// first included: its sum is the number of attempts.
	AttemptsName = "retry.call.attempts"
	// RetriesName is a histogram of the retries each call made. As in
	// A96, a call without retries records nothing, so that its count is the
	// number of calls that retried and its sum the number of retries.
	RetriesName = "retry.call.retries"
	// RetryDelayName is a histogram, in seconds, of the time each call
	// spent waiting with no attempt running: the waits before its retries,
	// not the hedge delays of retry.Hedge, during which an attempt ran (A96
	// counts "delay while there is no active attempt"). Recorded, as in
	// A96, only for calls that made more than one attempt.
	RetryDelayName = "retry.call.retry_delay"
	// DurationName is a histogram, in seconds, of each call's
	// retry.Trace.Elapsed, waits included.
	DurationName = "retry.call.duration"
)

// Bucket boundaries. Durations use those the semantic conventions give for
// http.client.request.duration; counts get one bucket per attempt up to
// the common limits, then coarser ones.
var (
	durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	countBuckets    = []float64{1, 2, 3, 4, 5, 6, 8, 10, 16, 32, 64}
)

// instruments are the Observer's meters and tracer.
type instruments struct {
	calls    metric.Int64Counter
	attempts metric.Int64Histogram
	retries  metric.Int64Histogram
	delay    metric.Float64Histogram
	duration metric.Float64Histogram
	tracer   trace.Tracer // nil when tracing is off: a noop provider

	meter metric.Meter // for the gauges registered later, such as ObserveConfigVersion's

	idemRequests metric.Int64Counter
	idemStore    metric.Float64Histogram
}

func newInstruments(c config) (ins instruments, err error) {
	m := c.meters.Meter(ScopeName)
	ins.meter = m
	if ins.calls, err = m.Int64Counter(CallsName, metric.WithUnit("{call}"),
		metric.WithDescription("Calls made through retry.Do or a retryhttp.Transport, by outcome.")); err != nil {
		return ins, err
	}
	if ins.attempts, err = m.Int64Histogram(AttemptsName, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts made during a call, the first included."),
		metric.WithExplicitBucketBoundaries(countBuckets...)); err != nil {
		return ins, err
	}
	if ins.retries, err = m.Int64Histogram(RetriesName, metric.WithUnit("{retry}"),
		metric.WithDescription("Retries made during a call; a call without retries records nothing."),
		metric.WithExplicitBucketBoundaries(countBuckets...)); err != nil {
		return ins, err
	}
	if ins.delay, err = m.Float64Histogram(RetryDelayName, metric.WithUnit("s"),
		metric.WithDescription("Time a call spent with no attempt running, waiting to retry; a call without retries records nothing."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return ins, err
	}
	if ins.duration, err = m.Float64Histogram(DurationName, metric.WithUnit("s"),
		metric.WithDescription("Duration of a call, from its first attempt to the end of its last, waits included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return ins, err
	}
	if ins.idemRequests, err = m.Int64Counter(IdempotencyRequestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests with an idempotency key that the middleware answered, by route and outcome.")); err != nil {
		return ins, err
	}
	if ins.idemStore, err = m.Float64Histogram(IdempotencyStoreDurationName, metric.WithUnit("s"),
		metric.WithDescription("Time a keyed request spent in the idempotency store."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return ins, err
	}
	if _, off := c.tracers.(noop.TracerProvider); !off {
		ins.tracer = c.tracers.Tracer(ScopeName)
	}
	return ins, nil
}

// operation holds one name's attribute sets, made once per outcome, so that
// recording a call computes and allocates none.
type operation struct {
	name   string
	other  bool // the "_OTHER" of the names past the cap
	add    [len(outcomes)][]metric.AddOption
	record [len(outcomes)][]metric.RecordOption
}

func newOperation(name string) *operation {
	op := &operation{name: name}
	for i, outcome := range outcomes {
		opt := metric.WithAttributeSet(attribute.NewSet(OperationKey.String(name), OutcomeKey.String(outcome)))
		op.add[i] = []metric.AddOption{opt}
		op.record[i] = []metric.RecordOption{opt}
	}
	return op
}

// recordMetrics records one call's metrics.
func (ins *instruments) recordMetrics(ctx context.Context, op *operation, oc int, t *retry.Trace) {
	rec := op.record[oc]
	ins.calls.Add(ctx, 1, op.add[oc]...)
	n := t.Attempts()
	ins.attempts.Record(ctx, int64(n), rec...)
	if n > 1 {
		ins.retries.Record(ctx, int64(n-1), rec...)
		ins.delay.Record(ctx, idle(t).Seconds(), rec...)
	}
	ins.duration.Record(ctx, t.Elapsed().Seconds(), rec...)
}

// idle returns the time t spent with no attempt running: the waits before
// the attempts that were not hedges. Hedge starts a retry only once nothing
// runs, and a hedge only while something does, so the Waits of the retries
// are exactly the idle time.
func idle(t *retry.Trace) time.Duration {
	var d time.Duration
	for a := range t.All() {
		if !a.Hedged {
			d += a.Wait
		}
	}
	return d
}
