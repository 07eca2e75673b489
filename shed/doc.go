// Package shed is the server half of storm control: a [Limiter] that
// admits as much concurrent work as the server can do at its unloaded
// latency, queues a little more, and sheds the rest at once with a
// suggested wait, so that the clients that retry come back spread out
// rather than all at once.
//
// An overloaded server with an unbounded queue answers every request, late:
// each late answer is a client's timeout, each timeout a retry, and the
// server spends its CPU on work whose callers have gone ("Fail at Scale",
// Facebook, 2015; the SRE book's "Handling Overload"). A Limiter keeps the
// work in flight near what the server does well. Its limit moves with the
// latency it sees ([Gradient], the default, or [AIMD]), or stays put
// ([Fixed]). A request over the limit waits in a short queue, served by
// [Priority] first, and newest first under sustained overload (Facebook's
// adaptive LIFO and CoDel), or is shed.
//
// [Limiter.Handler] wraps an http.Handler: a shed request never reaches
// it and gets 503 Service Unavailable with a Retry-After jittered per
// response. retrygrpc's UnaryServerInterceptor and StreamServerInterceptor
// do the same for gRPC, with the pushback of gRFC A6. Any other server
// calls [Limiter.Acquire] itself. Clients of this module honour both
// answers (retryhttp holds an origin for its Retry-After, retrygrpc a
// target for its pushback), and send their [Priority] with
// retryhttp.WithPriority, so the loop closes.
//
// The client side of the same limit, a bulkhead on the calls to one
// downstream, is guard.Limiter; both are driven by the same algorithms.
package shed
