package retryconfig

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/stormguard/retry"
)

// defaultWatchInterval is how often a zero WatchOptions looks at the file.
const defaultWatchInterval = 2 * time.Second

// WatchOptions configure [Live.Watch]. The zero WatchOptions are ready to
// use.
type WatchOptions struct {
	// Interval is how often the file is looked at [2s]: its identity, size
	// and time of change, and its bytes only when one of them moved.
	Interval time.Duration
	// Reload, if set, makes Watch read the file at once at each receive,
	// changed or not: give it the channel of signal.Notify(c,
	// syscall.SIGHUP) [none].
	Reload <-chan os.Signal
	// OnError, if set, is told once of each problem a look finds: a file
	// that cannot be read or is gone, or a document that Update rejects
	// [none]. The Live keeps the last good version meanwhile.
	OnError func(error)
	// Clock is the time source of the interval [real time].
	Clock retry.Clock
}

// Watch keeps l following the document in the file at path until ctx
// ends, and returns ctx's cause then. Make l from the file first (its
// content then is the version l holds): Watch takes the file as it finds
// it at its start, and Updates l with each new content after that.
//
// It polls, with no dependency: a file replaced by a rename (an editor's
// save, a Kubernetes ConfigMap's swap) or truncated and written again is
// read once its identity, size or time of change moves, and its bytes are
// compared with the last read, so that an unchanged file is not parsed
// again. A bad document, a file that cannot be read and one that is gone
// keep the last good version, and each is told to OnError once, until the
// file changes again. A write caught halfway is a bad document until the
// next look finds it whole.
func (l *Live) Watch(ctx context.Context, path string, o WatchOptions) error {
	if o.Interval < 0 {
		return fmt.Errorf("retryconfig: WatchOptions.Interval %v is negative", o.Interval)
	}
	if o.Interval == 0 {
		o.Interval = defaultWatchInterval
	}
	w := &watcher{l: l, path: path, o: o}
	w.look(false, true)
	for {
		var tick context.Context
		var stop context.CancelFunc
		if o.Clock != nil {
			tick, stop = o.Clock.WithTimeout(context.Background(), o.Interval)
		} else {
			tick, stop = context.WithTimeout(context.Background(), o.Interval)
		}
		select {
		case <-ctx.Done():
			stop()
			return context.Cause(ctx)
		case <-o.Reload:
			w.look(true, false)
		case <-tick.Done():
			w.look(false, false)
		}
		stop()
	}
}

// watcher is one Watch's memory of the file.
type watcher struct {
	l    *Live
	path string
	o    WatchOptions
	info fs.FileInfo // at the last look that found the file
	read []byte      // the bytes of the last read
	told string      // the problem last told, so that it is told once
}

// look reads the file if it changed (or force), and updates the Live with
// new content, unless first: the content Watch starts with is the Live's.
func (w *watcher) look(force, first bool) {
	info, err := os.Stat(w.path)
	if err != nil {
		w.info = nil
		w.tell(fmt.Errorf("retryconfig: watch %s: %w", w.path, err))
		return
	}
	if !force && w.info != nil && os.SameFile(info, w.info) && info.Size() == w.info.Size() && info.ModTime().Equal(w.info.ModTime()) {
		return // unchanged
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		w.tell(fmt.Errorf("retryconfig: watch %s: %w", w.path, err))
		return
	}
	w.info = info
	if first {
		w.read = data
		return
	}
	if !force && bytes.Equal(data, w.read) {
		w.told = "" // found again, as it was: a later problem is news
		return
	}
	w.read = data
	if err := w.l.Update(data); err != nil {
		w.tell(fmt.Errorf("retryconfig: watch %s: keeping version %d: %w", w.path, w.l.Version(), err))
		return
	}
	w.told = ""
}

// tell hands err to OnError, unless it was the last problem told.
func (w *watcher) tell(err error) {
	if w.told == err.Error() {
		return
	}
	w.told = err.Error()
	if w.o.OnError != nil {
		w.o.OnError(err)
	}
}
