// Package outbox runs durable intents: an op written to a journal before
// anyone is told it will happen, then run until it succeeds or is given up,
// under one idempotency key, even across a crash and a restart.
//
// A key belongs to the user's intent, not to a process. When the user
// presses Pay, [Outbox.Enqueue] makes the key, writes it with the op and
// fsyncs before it returns; [Outbox.Run] calls the op's [Handler] with the
// Policy's retries and writes each step; a process that dies is replaced
// by one that opens the same journal and resumes with the same key. With a
// server that honours the key (package idempotency, Stripe's API), the
// payment happens once however many attempts reach it.
//
// # Rules
//
// The retry rules are package retry's, applied across processes: the
// Classifier decides whether an error is worth another attempt;
// retry.Permanent ends an op at once; retry.RetryAfter sets a least wait;
// MaxAttempts counts handler calls made by every process, since the count
// is written before each call; the time of the next attempt is drawn once
// with the Policy's Jitter and written, so that a restart neither resets
// the backoff nor brings a fleet back as one herd. An op past its NotAfter
// (24h after Enqueue by default) or out of attempts is recorded as failed
// with its last error and its retry.Trace: a dead letter, listed by
// [Outbox.DeadLetters] and run again by [Outbox.Redrive]. An op that
// finished never runs again by itself. Stopping Run leaves the op it was
// running pending. [Outbox.Stats] counts the ops pending, running and
// failed, for a debug page or a metrics gauge.
//
// # The file journal
//
// [OpenFile] opens the embedded [Journal], one append-only file owned by one
// process at a time. Each record is framed as a little-endian uint32 length,
// a little-endian uint32 CRC-32C (Castagnoli) of the payload, and the
// payload: a type byte (1: an op added, 2: its state updated) and the
// fields of an [Entry]. Every record holds the op's whole state, so
// recovery replays the file and keeps the last record of each op. It stops
// at the first record whose length, checksum or fields do not hold (the
// tail a crash tore mid-append) and cuts the file there: every record
// whose write had returned is before it. See [FileJournal] for group
// commit, compaction and locking.
package outbox
