package retrydebug

// ConfigVersion makes the page, and its JSON, show the version of the retry
// configuration in force, read from version each time they are served, so
// that someone who has just pushed a change sees whether it was taken:
//
//	rec.ConfigVersion(live.Version) // a *retryconfig.Live
//
// A nil version removes it. The Recorder calls version with no lock held
// of its own, so version may take its own locks.
func (r *Recorder) ConfigVersion(version func() uint64) {
	r.mu.Lock()
	r.configVersion = version
	r.mu.Unlock()
}

// configVersionNow returns the version in force, and false if none was
// registered.
func (r *Recorder) configVersionNow() (uint64, bool) {
	r.mu.RLock()
	v := r.configVersion
	r.mu.RUnlock()
	if v == nil {
		return 0, false
	}
	return v(), true
}
