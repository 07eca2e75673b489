// Package idempotency is HTTP server middleware that runs each request with
// an idempotency key once, and replays its saved response to every retry.
//
// It is the server half of the IETF draft "The Idempotency-Key HTTP Header
// Field" (draft-ietf-httpapi-idempotency-key-header), in the manner of
// Stripe's API (https://docs.stripe.com/api/idempotent_requests) and of
// Brandur Leach's "Implementing Stripe-like Idempotency Keys in Postgres"
// (https://brandur.org/idempotency-keys). The client half is
// retryhttp.Transport with AutoIdempotencyKey, which sends one key on every
// attempt of a POST: with both, a retried POST has its effect once.
//
// # How a request is answered
//
// Requests whose method is not in Options.Methods (POST and PATCH by
// default) pass through untouched, as do requests without a key unless
// Options.Required is set. For a request with a key, in this order:
//
//   - 400 if the key is missing (Required), sent twice, empty, longer than
//     [MaxKeyLength], or neither an RFC 9110 token nor an RFC 8941
//     sf-string. The quoted form of the draft ("8e03…") and the bare form
//     (8e03…) are the same key.
//   - 413 if the body is larger than Options.MaxBodyBytes; the body is read
//     in full otherwise, to fingerprint the request.
//   - 503 with Retry-After if the store fails or times out: the handler
//     does not run, since nothing can tell whether the key ran before.
//   - 422 if the key was used for a different request: another method,
//     path, query, Content-Type or body. This is checked first, whether
//     that request is finished or still running.
//   - 409 with Retry-After if the same request is still running. It never
//     waits for that request and never runs the handler.
//   - The saved response, replayed byte for byte (status, the headers the
//     handler set, body) with Idempotent-Replayed: true, if the same
//     request has finished. The handler does not run.
//   - Otherwise the request claims the key and the handler runs.
//
// Errors are RFC 9457 problem details (application/problem+json); 409 and
// 503 carry Retry-After: 1.
//
// # What is saved
//
// The handler's response is held until the handler returns, then saved
// with the key, then sent: a response is never sent before a retry could
// get it replayed. (If the store fails at that point, the response is sent
// anyway, since the work is done, and the key stays claimed until its
// lease runs out.) Its status decides, through Options.Retryable
// ([DefaultRetryable]: 408, 429 and every 5xx): a response that means
// "nothing was done, try again" is sent but not saved, and the key is
// released, so that a retry runs the handler again. Every other response,
// 4xx included, is saved for Options.TTL (24h) and replayed; a retry of a
// 400 gets the same 400. A handler that panics is treated as one that did
// nothing: the key is released and the panic goes on. So a handler that has
// committed its effects must answer with a saved status, and should make
// its effects one transaction with its answer where it can.
//
// A response body larger than Options.MaxResponseBytes is not held: when
// the handler writes past the limit, the status and headers are saved,
// without the body, and the response then streams to its client in full.
// A replay of it has the original status and headers (but Content-Length),
// no body, and Idempotent-Body-Omitted: true: the handler does not run
// twice, but the retry does not get the body. Raise the limit for
// endpoints whose large responses must be replayed.
//
// # Leases and crashes
//
// A request holds its key for Options.Lease (10s), renewed every Lease/3
// while the handler runs, so a slow handler never loses its key. If the
// process dies mid-request, nothing renews the lease and the key is free
// one Lease later, not one TTL later. Each claim has a fencing token: if a
// lease is lost anyway (a store outage longer than the lease), the
// handler's ctx ends with cause [ErrLeaseLost], its result is not saved
// over the result of the request that took the key over, and its client is
// answered 409, so that its retry gets that result.
//
// # Scope
//
// A key belongs to a scope, Options.Scope: by default a digest of the
// Authorization header. A result is never replayed to another scope, and
// the same key in two scopes is two requests. A service that knows its
// authenticated principal should scope by it: with the default, a retry
// that carries a refreshed token is another caller's request and runs
// again. Store keys are a SHA-256 of scope and key, so no client text
// reaches the store.
//
// # Stores
//
// The default store, [MemoryStore], serves one process and is bounded in
// keys and bytes. Processes that serve the same clients need a shared
// store, such as the one of package
// github.com/stormguard/retry/idempotency/redisstore; the [Store] interface
// says what any other must do.
//
// # Limits
//
// The handler's response is buffered (up to MaxResponseBytes), so Flush
// and Hijack are not available to it. Its ResponseWriter starts with an
// empty header map: headers that outer handlers set (a request id, CORS)
// stay on the response but are not saved, so a replay gets them anew. Redirects, conditional requests and
// content negotiation are replayed as they were first answered.
package idempotency
