package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProgressWritesOnlyWhenThePercentChanges(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := newProgress(&b, "work", 400)
	for range 400 {
		p.Add(1)
	}
	p.Done()
	out := b.String()
	assert.Equal(t, 101, bytes.Count(b.Bytes(), []byte("\r")), "one update per percent, 0 to 100")
	assert.Contains(t, out, "\rwork:   0% (0 of 400 runs)")
	assert.Contains(t, out, "\rwork:  50% (200 of 400 runs)")
	assert.Regexp(t, `\rwork: 100% \(400 of 400 runs\)\n$`, out)
}

func TestProgressToNowhere(t *testing.T) {
	t.Parallel()
	p := newProgress(nil, "work", 10)
	p.Add(10)
	p.Done() // must not panic
}
