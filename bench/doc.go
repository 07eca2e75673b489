// Package bench compares the cost of github.com/stormguard/retry with the
// retry libraries its users would otherwise pick.
//
// It is a module of its own so that the core module never depends on the
// peers. Everything lives in _test.go files: one file per scenario group
// (first_test.go, retry_test.go, parallel_test.go, http_test.go,
// grpc_test.go), the cancellation latency measurement in cancel_test.go,
// and the configuration of every library, with the differences that could
// not be removed, in helpers_test.go. Each benchmark is named Scenario/library so that
// benchstat lines the libraries up; run.sh runs the lot and prints the
// summary. idempotency_test.go measures the server half of idempotency
// (package idempotency, with its in-memory store and with package
// redisstore on a local redis-server) against the same POST without it.
package bench
