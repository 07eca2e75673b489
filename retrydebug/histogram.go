package retrydebug

import (
	"math/bits"
	"time"
)

// The histogram of call durations: log-linear buckets, 8 to each power of
// two, from 1µs to about 73 minutes. Its size is fixed, so recording costs
// an index computation and an increment, never an allocation, and a
// quantile read from it is within 1/16 (6.25%) of the true value.
const (
	histSubBits = 3  // 2^3 = 8 buckets per power of two
	histMinExp  = 10 // 2^10ns ≈ 1µs: shorter durations share bucket 0
	histMaxExp  = 42 // 2^42ns ≈ 73min: longer ones share the last bucket
	histBuckets = 1 + (histMaxExp-histMinExp)<<histSubBits
)

// histogram counts durations in fixed buckets. The zero value is empty.
// It is not safe for concurrent use: the operation that owns it locks.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

// bucketOf returns the index of the bucket that holds d.
func bucketOf(d time.Duration) int {
	if d < 1<<histMinExp {
		return 0
	}
	e := bits.Len64(uint64(d)) - 1 // 2^e ≤ d < 2^(e+1)
	if e >= histMaxExp {
		return histBuckets - 1
	}
	sub := int(uint64(d)>>(e-histSubBits)) & (1<<histSubBits - 1)
	return 1 + (e-histMinExp)<<histSubBits + sub
}

// bounds returns the range [lo, hi) of bucket i > 0.
func bounds(i int) (lo, hi time.Duration) {
	e := (i-1)>>histSubBits + histMinExp
	sub := (i - 1) & (1<<histSubBits - 1)
	step := time.Duration(1) << (e - histSubBits)
	lo = time.Duration(1)<<e + time.Duration(sub)*step
	return lo, lo + step
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucketOf(max(d, 0))]++
	h.n++
	h.max = max(h.max, d)
}

// quantile returns an estimate of the q-quantile (0 < q ≤ 1): the middle
// of the bucket that holds the ⌈q·n⌉-th smallest duration, no more than the
// largest duration seen. Bucket 0 (under 1µs) reads as 0: it holds the
// calls whose Trace measured no time (see Attempt.Start in package retry).
// The last bucket, for calls of 68 minutes and more, reads as the largest.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		switch i {
		case 0:
			return 0
		case histBuckets - 1: // open-ended: its middle means nothing
			return h.max
		}
		lo, hi := bounds(i)
		return min(lo+(hi-lo)/2, h.max)
	}
	return h.max
}

// percentiles returns the p50, p95, p99 and max of h.
func (h *histogram) percentiles() Percentiles {
	return Percentiles{P50: h.quantile(0.50), P95: h.quantile(0.95), P99: h.quantile(0.99), Max: h.max}
}
