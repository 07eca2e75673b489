package redisstore_test

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// droppingProxy is a loopback TCP proxy in front of a redis-server that loses
// replies at random, for load tests (lossyProxy, in proxy_test.go, loses
// chosen script replies, for unit tests): it passes every command on, and
// for a share of the replies, of any command,
// closes the client's connection instead of passing the reply back. Redis
// has run the command; the client sees its connection end, and go-redis
// sends the command again on another (MaxRetries, 3 by default). That is
// what a network that drops a reply, or a connection that dies as the
// reply comes, does to a store call.
type droppingProxy struct {
	ln     net.Listener
	target string
	loss   float64

	mu    sync.Mutex
	rnd   *rand.Rand
	conns map[net.Conn]struct{}

	lost atomic.Int64 // replies lost
	wg   sync.WaitGroup
}

// startDroppingProxy proxies to target, losing the share loss of replies,
// and stops when the test ends. It returns the proxy's address.
func startDroppingProxy(t *testing.T, target string, loss float64, seed uint64) *droppingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &droppingProxy{ln: ln, target: target, loss: loss, rnd: rand.New(rand.NewPCG(seed, seed)), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *droppingProxy) addr() string { return p.ln.Addr().String() }

func (p *droppingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Go(func() { p.commands(c, s) })
		p.wg.Go(func() { p.replies(s, c) })
	}
}

// track registers a pair of connections, or closes them if the proxy is
// closing.
func (p *droppingProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// commands passes the client's commands to Redis, all of them.
func (p *droppingProxy) commands(c, s net.Conn) {
	_, _ = io.Copy(s, c)
	c.Close()
	s.Close()
}

// replies passes Redis's replies back, but for those it loses: then both
// connections close, with the command run and its reply unsent. Each read
// is one reply, since go-redis sends one command at a time on a connection
// outside pipelines.
func (p *droppingProxy) replies(s, c net.Conn) {
	defer p.untrack(c, s)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if p.draw() {
				p.lost.Add(1)
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// untrack closes a pair of connections and forgets them.
func (p *droppingProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c) // a no-op once the proxy is closed
	}
}

func (p *droppingProxy) draw() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rnd.Float64() < p.loss
}

func (p *droppingProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
