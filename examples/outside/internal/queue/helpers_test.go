package queue_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/examples/outside/internal/queue"
)

// broker is an in-memory Client: each Publish takes the next answer of its
// topic's script, and nil once the script is used up; it records every
// publish that reached it, with the time on the real clock (fake inside a
// synctest bubble).
type broker struct {
	mu      sync.Mutex
	scripts map[string][]error
	always  map[string]error // answers every publish of a topic, when set
	got     []publish
}

type publish struct {
	topic string
	msg   string
	at    time.Time
}

func newBroker() *broker {
	return &broker{scripts: map[string][]error{}, always: map[string]error{}}
}

// script makes the next publishes to topic answer errs, in order.
func (b *broker) script(topic string, errs ...error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scripts[topic] = append(b.scripts[topic], errs...)
}

// fail makes every publish to topic answer err; nil ends it.
func (b *broker) fail(topic string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		delete(b.always, topic)
		return
	}
	b.always[topic] = err
}

func (b *broker) Publish(ctx context.Context, topic string, msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, publish{topic, string(msg), time.Now()})
	if err := b.always[topic]; err != nil {
		return err
	}
	if s := b.scripts[topic]; len(s) > 0 {
		b.scripts[topic] = s[1:]
		return s[0]
	}
	return nil
}

// published returns the publishes that reached the broker, to topic, or
// to every topic when topic is "".
func (b *broker) published(topic string) []publish {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []publish
	for _, p := range b.got {
		if topic == "" || p.topic == topic {
			out = append(out, p)
		}
	}
	return out
}

// newPublisher returns a Publisher over b, closed when the test ends.
func newPublisher(t *testing.T, b queue.Client, o queue.Options) *queue.Publisher {
	t.Helper()
	p, err := queue.New(b, o)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// logBuffer is a slog text logger into a buffer, without times, safe for
// the concurrent calls that may log a change.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}
