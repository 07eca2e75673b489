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
// is durable before each call (over a SharedJournal, in the claim); the
// time of the next attempt is drawn once with the Policy's Jitter and
// written, so that a restart neither resets the backoff nor brings a fleet
// back as one herd. An op past its NotAfter
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
// process at a time. The file starts with an 8-byte header, "\x89OBXJNL"
// and the format's version. Each record is framed as a little-endian
// uint32 length, a little-endian uint32 CRC-32C (Castagnoli) of the
// payload, and the payload: a type byte (an op added, its state updated),
// the number of the write that carried it, and the fields of an [Entry],
// times whole (seconds and nanoseconds, so that a NotAfter past 2262 does
// not wrap). Every record holds the op's whole state, so recovery replays
// the file and keeps the last record of each op. A crash tears only the
// tail, the last write, which recovery cuts, so that every record whose
// write had returned is kept; a bad record followed by a later write's,
// or a file that is not a journal at all, is damage a crash cannot do,
// and OpenFile refuses it with [ErrCorrupt], leaving the file untouched,
// rather than drop the records after it. A file of v0.1 (no header) still
// opens, and is rewritten in this format. See [FileJournal] for group
// commit, compaction and locking.
package outbox
