package redisstore_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// lossyProxy is a loopback TCP proxy in front of a redis-server that loses
// the replies to scripts: Redis runs the script, the proxy reads the start
// of its reply and closes the client's connection instead of passing it
// on. go-redis takes the EOF for a lost command and sends it again, on a
// new connection; the proxy passes the reply to that second sending (the
// same bytes) on. So each script it loses runs twice in Redis, as it does
// when a real network drops a connection at the wrong moment.
//
// An error reply (NOSCRIPT, which makes go-redis load the script) is
// always passed on: it did nothing.
type lossyProxy struct {
	ln     net.Listener
	target string
	lose   atomic.Int64 // how many more replies to lose; negative: every first one
	lost   atomic.Int64 // how many were lost

	mu     sync.Mutex
	sent   map[[32]byte]bool // commands whose reply was lost, not yet sent again
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// newLossyProxy starts a proxy to the redis-server at target, stopped when
// the test ends. It passes every reply on until told otherwise.
func newLossyProxy(t *testing.T, target string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &lossyProxy{ln: ln, target: target, sent: map[[32]byte]bool{}, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is where clients dial the proxy.
func (p *lossyProxy) Addr() string { return p.ln.Addr().String() }

// LoseNext makes the proxy lose the replies to the next n scripts; n < 0
// loses the first reply of every script from now on.
func (p *lossyProxy) LoseNext(n int64) { p.lose.Store(n) }

// Lost returns how many replies the proxy has lost.
func (p *lossyProxy) Lost() int64 { return p.lost.Load() }

// client returns a go-redis client through the proxy, with go-redis's
// default MaxRetries (3) and a short backoff, closed when the test ends.
func (p *lossyProxy) client(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: p.Addr(), MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (p *lossyProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *lossyProxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.closed {
		return false
	}
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *lossyProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, true) || !p.track(s, true) {
			_, _ = c.Close(), s.Close()
			return
		}
		l := &link{p: p, client: c, server: s}
		p.wg.Go(l.up)
		p.wg.Go(l.down)
	}
}

// link is one client connection and its connection to Redis.
type link struct {
	p              *lossyProxy
	client, server net.Conn

	mu      sync.Mutex
	pending *[32]byte // the script whose reply is to be lost, if any
}

func (l *link) shut() {
	_ = l.client.Close()
	_ = l.server.Close()
	l.p.track(l.client, false)
	l.p.track(l.server, false)
}

// up passes commands from the client to Redis, marking a script whose
// reply is to be lost before Redis can answer it.
func (l *link) up() {
	defer l.shut()
	br := bufio.NewReader(l.client)
	for {
		raw, name, err := readCommand(br)
		if err != nil {
			return
		}
		if name == "EVALSHA" || name == "EVAL" {
			sum := sha256.Sum256(raw)
			l.p.mu.Lock()
			again := l.p.sent[sum]
			delete(l.p.sent, sum)
			l.p.mu.Unlock()
			if !again && l.p.lose.Load() != 0 {
				l.mu.Lock()
				l.pending = &sum
				l.mu.Unlock()
			}
		}
		if _, err := l.server.Write(raw); err != nil {
			return
		}
	}
}

// take reports whether a reply may be lost now, and counts it if so.
func (p *lossyProxy) take() bool {
	for {
		n := p.lose.Load()
		switch {
		case n < 0:
			return true
		case n == 0:
			return false
		case p.lose.CompareAndSwap(n, n-1):
			return true
		}
	}
}

// down passes replies from Redis to the client, but for a marked script's:
// it closes the connection on it, once Redis has begun to answer.
func (l *link) down() {
	defer l.shut()
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		if n > 0 {
			l.mu.Lock()
			pending := l.pending
			l.pending = nil
			l.mu.Unlock()
			if pending != nil && buf[0] != '-' && l.p.take() {
				l.p.mu.Lock()
				l.p.sent[*pending] = true
				l.p.mu.Unlock()
				l.p.lost.Add(1)
				return // the reply is lost with the connection
			}
			if _, err := l.client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readCommand reads one RESP command, an array of bulk strings, as
// go-redis sends them, and returns its bytes and its name in upper case.
func readCommand(br *bufio.Reader) (raw []byte, name string, err error) {
	var b bytes.Buffer
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, "", err
	}
	b.WriteString(line)
	if !strings.HasPrefix(line, "*") {
		return nil, "", fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, "", err
	}
	for i := range n {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		b.WriteString(line)
		if !strings.HasPrefix(line, "$") {
			return nil, "", errors.New("not a bulk string")
		}
		size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil {
			return nil, "", err
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(br, arg); err != nil {
			return nil, "", err
		}
		b.Write(arg)
		if i == 0 {
			name = strings.ToUpper(string(arg[:size]))
		}
	}
	return b.Bytes(), name, nil
}
