package guard

import "time"

// CountForTest adds requests and accepts to t's window at at, so that a
// test can check the formula on exact counts, without the random draw.
func (t *Throttle) CountForTest(at time.Time, requests, accepts uint64) {
	t.w.add(at, t.bucketWidth(), requests, accepts)
}

// The bounds of a Holds, for its tests.
const (
	HoldMaxKeys = maxHoldKeys
)

// ZeroKnownForTest reports whether t knows its reject probability to be
// zero at at, so that an attempt then skips the window's sum.
func (t *Throttle) ZeroKnownForTest(at time.Time) bool {
	return zeroKnown(t.zeroIn.Load(), t.w.epoch(at, t.bucketWidth()))
}
