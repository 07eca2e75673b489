package retryconfig

import "time"

// StaleIfError returns the staleIfError of the policy Policy(name): the age
// up to which its HTTP GET and HEAD requests accept a stored response in
// place of a failure, as retryhttp.WithStaleIfError does for one request;
// 0 when the document does not set it.
func (c *Config) StaleIfError(name string) time.Duration {
	if e := c.lookup(name); e != nil {
		return e.staleIfError
	}
	return 0
}

// parseStaleIfError reads a policy's staleIfError: a positive duration.
func parseStaleIfError(v *value) (time.Duration, error) {
	d, err := durationJSON(v)
	if err == nil && d <= 0 {
		err = errorf("%v is not positive: leave the field out for no stale answers", d)
	}
	return d, err
}
