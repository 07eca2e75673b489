package retryhttp

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A pacer keeps at most maxPaced origins, whatever the traffic, and
// forgets an origin whose window has ended when it is next looked at.
func TestPacerIsBounded(t *testing.T) {
	t.Parallel()
	var p pacer
	now := time.Unix(1_780_000_000, 0)
	q := QuotaState{Remaining: 10, Reset: 10 * time.Second, Interval: time.Second}
	for i := range 3 * maxPaced {
		p.set("https://h"+strconv.Itoa(i)+".test", now, q)
	}
	n := 0
	p.m.Range(func(any, any) bool { n++; return true })
	assert.LessOrEqual(t, n, maxPaced)
	assert.Equal(t, int32(n), p.n.Load())

	p.set("https://a.test", now, q)
	wait, err := p.turn("https://a.test", now, time.Minute, time.Time{}, false)
	assert.NoError(t, err)
	assert.Zero(t, wait)
	wait, _ = p.turn("https://a.test", now, time.Minute, time.Time{}, false)
	assert.Equal(t, time.Second, wait)
	before := p.n.Load()
	wait, _ = p.turn("https://a.test", now.Add(10*time.Second), time.Minute, time.Time{}, false)
	assert.Zero(t, wait, "the window has ended")
	assert.Equal(t, before-1, p.n.Load(), "and the origin is forgotten")

	p.set("https://b.test", now, QuotaState{Remaining: 0, Reset: time.Second})
	_, ok := p.m.Load("https://b.test")
	assert.False(t, ok, "a quota used up paces nothing: it holds")
}
