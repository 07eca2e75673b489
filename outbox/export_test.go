package outbox

import "os"

// SetCompactAt sets the least size at which j compacts, so that tests need
// not write a megabyte first.
func SetCompactAt(j *FileJournal, n int64) {
	j.mu.Lock()
	j.compact = n
	j.mu.Unlock()
}

// Size returns the journal file's size as j knows it.
func Size(j *FileJournal) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Live returns j's estimate of a compacted file's size.
func Live(j *FileJournal) int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.live
}

// LockByFile is the lock of systems without flock, to test it everywhere.
var LockByFile = lockByFile

// Preallocate is how the journal reserves (and zeroes) its file's blocks.
var Preallocate = preallocate

// SetWriteAt makes j write its batches with fn in place of f.WriteAt.
func SetWriteAt(j *FileJournal, fn func(f *os.File, b []byte, off int64) (int, error)) {
	j.mu.Lock()
	j.writeAt = fn
	j.mu.Unlock()
}

// MaxWriting is how many times Concurrency attempts may be in flight.
const MaxWriting = maxWriting
