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
