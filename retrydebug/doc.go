// Package retrydebug shows a running service's retries on a debug page: for
// each operation, its last calls with their attempts and waits, and running
// totals of calls, attempts, retries per call, calls that gave up, calls
// answered stale (retry.StopStale), elapsed percentiles and the tokens left
// in retry budgets.
//
// A [Recorder] collects the calls. It is wired in one line: to a
// retry.Policy through [Recorder.OnDone], which names the operation,
//
//	p.OnDone = rec.OnDone("inventory.get")
//
// and to a retryhttp.Transport through [Recorder.RecordHTTP], which names a
// request by the route given with retryhttp.WithRoute, or else by its method
// and origin ("GET https://api.example"), never by its path or query:
//
//	transport.OnDone = rec.RecordHTTP
//
// and to the retrygrpc interceptors through [Recorder.RecordGRPC], which
// names a call by its method and takes a retrygrpc.Summary's parts, so
// that this package never depends on grpc:
//
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		rec.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
//	})
//
// It also counts, per route, the keyed requests that an idempotency
// middleware answered, by outcome (replays, 409s, 422s, 503s, lost leases),
// with the time they spent in the store: wire [Recorder.RecordIdempotency]
// to idempotency.Options.OnDone.
//
//	opts.OnDone = rec.RecordIdempotency
//
// A server's load shedder, a shed.Limiter, shows its limit, what it has in
// flight and queued, and what it admitted and shed, with
// [Recorder.ShedLimiter]:
//
//	rec.ShedLimiter("api", limiter)
//
// During a game day, [Recorder.Chaos] shows a chaos.Switch: on or off, and
// the faults it has injected, next to what the retries made of them.
//
// Wire each retry loop to the Recorder once: a retryhttp.Transport through
// its OnDone, and not also through its Policy's OnDone, or each request is
// counted twice, under two names (see [Recorder.RecordHTTP]).
//
// Its memory is bounded whatever the traffic: a ring of the last calls per
// operation, fixed-size totals, and a cap on the number of operations past
// which calls share one overflow bucket. Recording a call allocates nothing.
//
// A Recorder is an http.Handler, in the manner of net/http/pprof and expvar
// (see [Recorder.ServeHTTP]): a server-rendered page with no script and no
// asset from elsewhere, which refreshes itself, and its JSON twin at
// ?format=json. Mount it on an internal listener, a loopback or admin port
// as in net/http/pprof's own example (localhost:6060), and never on the one
// that serves users: operation names and traffic patterns tell an attacker
// much.
//
//	mux := http.NewServeMux()
//	mux.Handle("/debug/retries", rec)
//	go http.ListenAndServe("127.0.0.1:6060", mux) // loopback only
//
// Nothing it keeps or shows comes from an error's message, a header or a
// query string: only names, numbers, stop reasons, HTTP statuses, gRPC
// codes and the short fixed reasons of a retry.Trace.
package retrydebug
