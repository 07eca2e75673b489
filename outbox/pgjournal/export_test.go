package pgjournal

import "time"

// QuietFor makes j send at most one notice every d, from statements
// alone or not, so that a test knows which of its statements sent none.
func QuietFor(j *Journal, d time.Duration) { j.notices.every, j.notices.alone = d, true }
