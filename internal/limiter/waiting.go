package limiter

// Waiting reports whether any request waits in the queue: a wrapper that
// keeps no latencies (NoSamples) reads the clock for Release only then,
// when the time can matter to the queue.
func (l *Limiter) Waiting() bool { return l.waiting.Load() != 0 }
