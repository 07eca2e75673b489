// Package limiter is the one concurrency limit of this module: a limit on
// work in flight that an algorithm moves with the latency it sees, and a
// bounded queue of waiters served by priority. The server's load shedder
// (package shed) and the client's bulkhead (guard.Limiter) are both thin
// wrappers around it, so the two halves of storm control follow the same
// rule.
//
// Admission is lock-free while a slot is free and nobody waits: one atomic
// load of the queue length and one compare-and-swap on the count in flight.
// Everything else (the queue, the algorithm's state) is under one mutex.
package limiter
