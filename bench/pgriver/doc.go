// Package pgriver benchmarks the outbox's PostgreSQL journal side by side
// with River (github.com/riverqueue/river) on one server.
package pgriver
