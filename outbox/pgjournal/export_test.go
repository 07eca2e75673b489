package pgjournal

import "time"

// QuietFor makes j send at most one notice every d, from statements
// alone or not, so that a test knows which of its statements sent none,
// and Listen wake once more trail after a notice.
func QuietFor(j *Journal, d, trail time.Duration) {
	j.notices.every, j.notices.alone, j.notices.trail = d, true, trail
}
