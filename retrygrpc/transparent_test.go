package retrygrpc_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// HTTP/2 frame types, settings and error codes (RFC 9113) that
// refusingConn reads.
const (
	frameRSTStream            = 0x3
	frameSettings             = 0x4
	settingMaxConcurrent      = 0x3
	errCodeRefusedStream      = 0x7
	frameHeaderLen            = 9
	settingLen                = 6
	advertisedConcurrentLimit = 100
)

// refusingConn is a server connection that tells the client the server
// takes up to 100 concurrent streams, whatever the server says, and counts
// the streams the server refuses with REFUSED_STREAM. A server that takes
// fewer refuses the streams over its limit before any handler sees them:
// what a proxy under load does, and what grpc-go retries transparently. It
// rewrites the server's bytes in place as they go by, frame by frame.
type refusingConn struct {
	net.Conn
	refused *atomic.Int32

	mu      sync.Mutex
	hdr     [frameHeaderLen]byte
	nh      int // header bytes seen of the current frame
	left    int // payload bytes still to come
	off     int // payload bytes seen
	setting uint16
	rst     uint32
}

func (c *refusingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for i := range p {
		c.see(&p[i])
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// see reads one byte of the server's output, and changes it if it is part
// of a MAX_CONCURRENT_STREAMS value.
func (c *refusingConn) see(b *byte) {
	if c.left == 0 && c.nh < frameHeaderLen {
		c.hdr[c.nh] = *b
		c.nh++
		if c.nh == frameHeaderLen {
			c.left = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
			c.off, c.setting, c.rst = 0, 0, 0
			if c.left == 0 {
				c.nh = 0
			}
		}
		return
	}
	typ, ack := c.hdr[3], c.hdr[4]&1 != 0
	switch e := c.off % settingLen; {
	case typ == frameSettings && !ack && e < 2:
		c.setting = c.setting<<8 | uint16(*b)
	case typ == frameSettings && !ack && c.setting == settingMaxConcurrent:
		var v [4]byte
		binary.BigEndian.PutUint32(v[:], advertisedConcurrentLimit)
		*b = v[e-2]
		if e == settingLen-1 {
			c.setting = 0
		}
	case typ == frameSettings && e == settingLen-1:
		c.setting = 0
	case typ == frameRSTStream:
		c.rst = c.rst<<8 | uint32(*b)
		if c.off == 3 && c.rst == errCodeRefusedStream {
			c.refused.Add(1)
		}
	}
	c.off++
	c.left--
	if c.left == 0 {
		c.nh = 0
	}
}

// grpc-go retries an attempt that the server refused before any handler saw
// it, transparently, inside one attempt of the interceptor: the retry is not
// in the Trace, is not counted against MaxAttempts or in
// grpc-previous-rpc-attempts, and the handler sees the call once.
func TestTransparentRetryInsideOneAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := newServer(reply{block: true}, reply{})
		var refused atomic.Int32
		p := fast()
		// The blocking call ends while the interceptor waits to retry, so
		// that its retry finds the server's one stream free.
		p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { close(release) }
		cc := dialWith(t, srv, []grpc.ServerOption{grpc.MaxConcurrentStreams(1)},
			func(c net.Conn) net.Conn { return &refusingConn{Conn: c, refused: &refused} },
			withRetry(p, retrygrpc.WithAllIdempotent()))
		c := testgrpc.NewTestServiceClient(cc)

		blocking, cancel := context.WithCancel(t.Context())
		go func() {
			<-release
			cancel()
		}()
		done := make(chan error, 1)
		go func() {
			_, err := unary(blocking, c, "first")
			done <- err
		}()
		<-srv.arrived // the first call holds the server's one stream

		tr, err := unary(t.Context(), c, "second")
		require.NoError(t, err)
		assert.Equal(t, codes.Canceled, status.Code(<-done))
		assert.EqualValues(t, 2, refused.Load(), "the first attempt was refused, and so was grpc-go's transparent retry of it")
		assert.Equal(t, 2, tr.Attempts(), "grpc-go's transparent retry is not an attempt of the interceptor")
		calls := srv.seen()
		require.Len(t, calls, 2, "each handler saw its call once")
		assert.Equal(t, "second", calls[1].payload)
		assert.Equal(t, []string{"1"}, calls[1].previous)
	})
}
