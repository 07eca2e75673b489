// Package retrygrpc retries gRPC client calls that are safe to repeat, with
// the policy, jitter, deadlines, budget and Trace of package retry.
//
// [UnaryClientInterceptor] and [StreamClientInterceptor] take a
// retry.Policy and [Option]s; install them on a ClientConn with
// grpc.WithChainUnaryInterceptor and grpc.WithChainStreamInterceptor.
//
// # Safe by default: unmarked methods get one attempt
//
// A method is retried only when it is marked as idempotent, with
// [WithIdempotent], [WithAllIdempotent], or per call with [CallIdempotent].
// EVERY OTHER METHOD GETS EXACTLY ONE ATTEMPT, whatever its status code: a
// call that failed may have been carried out by the server before it failed,
// and only the service's owner knows whether doing it twice is harmless. A
// marked method is retried on the codes of [WithCodes], UNAVAILABLE by
// default, and when the Policy's AttemptTimeout or MaxElapsed cut an
// attempt short while the caller's ctx is alive.
//
// # What the server sees and says
//
// Every attempt sends the same request message. The second attempt carries
// the metadata grpc-previous-rpc-attempts: "1", the third "2", and so on,
// as gRFC A6 specifies; the first carries none. A server can push back,
// also as A6 specifies, with the trailer grpc-retry-pushback-ms: a value of
// n asks for a wait of at least n milliseconds before the next attempt; a
// negative, malformed or repeated value asks for no retry at all, and the
// call fails at once. A google.rpc.RetryInfo among the status details
// (https://cloud.google.com/apis/design/errors#retryinfo) asks for a wait of
// at least its retry_delay. Neither makes a code retryable that is not.
//
// A server's wait is a floor, not the whole wait: the interceptor waits
// that long plus the Policy's jittered backoff for that retry (see
// retry.Decision.RetryAfter), so that clients told the same wait do not come
// back in lockstep. With the default full jitter, the wait after a pushback
// of 500ms is uniform in [500ms, 500ms + backoff). grpc-go's own retry waits
// the pushback exactly. A wait that would pass MaxElapsed or the ctx
// deadline ends the call at once with retry.ErrDeadline, and a server wait
// of [WithMaxRetryAfter] (a minute by default) or more is not waited for.
//
// A server's wait also holds back the whole client: every new attempt that
// the interceptor makes to the same target waits until it ends, so that a
// thousand concurrent calls do not each have to reach a throttled server to
// learn the same thing. See [WithoutHold].
//
// # Errors
//
// The error of a failed call carries the status that the last attempt got,
// unchanged: status.Code and status.Convert read it as they would without
// the interceptor. When the caller's ctx ends, the status is CANCELLED or
// DEADLINE_EXCEEDED, as grpc gives it. The same error matches, with
// errors.Is, retry.ErrGaveUp and why retrying stopped (retry.ErrExhausted,
// retry.ErrDeadline, retry.ErrBudgetExhausted) when retries ran out, and
// the last attempt's error.
//
// # Committed calls (gRFC A6)
//
// A call is retried only until it commits, as gRFC A6 ("When Retries are
// Valid", https://github.com/grpc/proposal/blob/master/A6-client-retries.md)
// defines it: once the client has received the response header, the
// server's initial metadata may have changed what the caller does, so a
// later failure is not retried. A unary call whose server sent its header
// (grpc.SendHeader) and then failed gets one attempt; the usual error, sent
// as a trailers-only response with no header, is retried. A
// server-streaming call is retried until a response header or message has
// come; an error after that is returned as it is. A client-streaming or
// bidi call is retried only while its stream opens, before anything is
// sent; see [StreamClientInterceptor].
//
// # Where the interceptor differs from grpc-go's own retries
//
// A6 caps maxAttempts at 5 on the client, because a service config can
// reach the client through DNS, from whoever controls it. The interceptor
// applies no such cap: its Policy is the client's own code, not a config a
// server sent, so MaxAttempts means what it says (4 by default), and a
// guard.Budget is what bounds the load retries add across calls.
//
// After a pushback of n ms, A6 retries in exactly n ms and, if that attempt
// fails too, starts the backoff over from its initial value. The
// interceptor waits n ms plus the Policy's jittered backoff for that retry
// (as above), and the backoff keeps growing from where it was: a server
// that pushed back is loaded, and clients that restarted their backoff
// would come back to it sooner, and together.
//
// # Time on an injected clock
//
// When the Policy has a Clock (a fake in a test), the deadlines of
// AttemptTimeout and MaxElapsed are kept on that clock, and the deadline a
// unary attempt sends to the server is the time left on it, counted on the
// real clock from when the attempt starts: a fake clock's time may lie
// anywhere on the real one, and the server reads the deadline as a real
// timeout. A test server that takes longer in real time than that is
// timed out as it would be in production. Stream attempts send only the
// caller's own deadline, since a committed stream must outlive the others.
//
// # One retry owner
//
// A call made inside another retry loop (a retry.Do whose op makes the call,
// or a second retrying interceptor above this one) makes one attempt and
// leaves retrying to that loop; see retry.Policy.RetryNested.
//
// grpc-go can retry by itself too, when the service config gives a method
// a retryPolicy (A6). The interceptor does not stack its attempts on those:
// a method with a retryPolicy in the ClientConn's service config gets one
// attempt from the interceptor, its Trace says "left to grpc-go's
// retryPolicy", and grpc-go retries it as configured. To have the
// interceptor retry every method instead, make the ClientConn with
// grpc.WithDisableRetry() and pass [WithGRPCRetryDisabled]. The interceptor
// reads the service config through ClientConn.GetMethodConfig, which does
// not see the per-route retry policies of xDS: with xDS, use
// grpc.WithDisableRetry and WithGRPCRetryDisabled, or leave retries to xDS.
//
// grpc-go also retries transparently, without any config, an attempt that
// never reached the server's application: one that never left the client,
// or that the server refused before handling it (REFUSED_STREAM, or a
// stream a GOAWAY cut off). Such a retry happens inside one attempt of the
// interceptor; it is not in the Trace and does not count against
// MaxAttempts or the Budget, since the server's handler saw the call at most
// once.
//
// # Hedging
//
// With [WithPolicies], a unary or server-streaming method whose policy has
// a gRFC A6 hedgingPolicy is hedged rather than retried: several copies
// race, one each hedgingDelay, and the first OK or fatal status decides
// the call (see WithPolicies for the rules). A server stream's copy wins
// when it commits: its response header comes, or it ends with OK; the
// stream is then the caller's and is never sent again. Client-streaming
// and bidi streams are not hedged, since the interceptor keeps no copy of
// what the caller streams: they make one attempt. grpc-go parses
// hedgingPolicy but does not act on it, so the two never stack.
//
// # Load shedding on the server
//
// [UnaryServerInterceptor] and [StreamServerInterceptor] are the server
// half of the same loop: they admit calls through a shed.Limiter and shed
// the rest with UNAVAILABLE and a jittered pushback, which the client
// interceptors wait before they retry and hold every call to the target
// back for. [WithPriority] tells the server which calls to shed first.
//
// # Order among interceptors
//
// Interceptors placed before this one in the chain see one call, whatever
// the retries; those placed after it see each attempt. Put metrics that
// should count attempts, and auth that must be fresh on each attempt, after
// it, and [ChaosUnaryClientInterceptor] too, so that each attempt of a game
// day is drawn for.
//
// # Faults on purpose
//
// [ChaosUnaryClientInterceptor] and [ChaosUnaryServerInterceptor] inject
// the faults of package chaos into unary calls, off until their
// chaos.Switch is on, to prove a service's retries, budgets and breakers
// before an outage does.
package retrygrpc
