package retrygrpc_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

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
// takes up to 100 concurrent streams, whatever the server says. A server
// that takes fewer refuses the streams over its limit with REFUSED_STREAM
// before any handler sees them: what a proxy under load does, and what
// grpc-go retries transparently. The connection rewrites the server's bytes
// in place as they go by, frame by frame, and calls onRefuse when the
// server refuses a stream, before the client can learn of it.
type refusingConn struct {
	net.Conn
	refused  *atomic.Int32
	onRefuse func()

	mu      sync.Mutex
	hdr     [frameHeaderLen]byte
	nh      int // header bytes seen of the current frame
	left    int // payload bytes still to come
	off     int // payload bytes seen
	setting uint16
	rst     uint32
	refusal bool // p holds a refusal
}

// Write holds the lock through the write, so that the bytes are read in
// the order they go out. Only the server's writer goroutine writes once
// the connection is up, so the lock is never contended.
func (c *refusingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range p {
		c.see(&p[i])
	}
	if c.refusal {
		c.refusal = false
		c.onRefuse()
	}
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
			c.refusal = true
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
		srv := newServer(reply{block: true}, reply{})
		blocking, cancel := context.WithCancel(t.Context())
		var refused atomic.Int32
		// When the server refuses the second call, the first one ends, and
		// its stream is gone from the server before the client learns of
		// the refusal: grpc-go's transparent retry then finds room.
		onRefuse := func() {
			cancel()
			synctest.Wait()
		}
		cc := dialWith(t, srv, []grpc.ServerOption{grpc.MaxConcurrentStreams(1)},
			func(c net.Conn) net.Conn { return &refusingConn{Conn: c, refused: &refused, onRefuse: onRefuse} },
			withRetry(fast(), retrygrpc.WithAllIdempotent()))
		c := testgrpc.NewTestServiceClient(cc)

		done := make(chan error, 1)
		go func() {
			_, err := unary(blocking, c, "first")
			done <- err
		}()
		<-srv.arrived // the first call holds the server's one stream

		tr, err := unary(t.Context(), c, "second")
		require.NoError(t, err)
		assert.Equal(t, codes.Canceled, status.Code(<-done))
		assert.EqualValues(t, 1, refused.Load(), "the server refused the second call once")
		assert.Equal(t, 1, tr.Attempts(), "grpc-go's transparent retry is not an attempt of the interceptor")
		calls := srv.seen()
		require.Len(t, calls, 2, "each handler saw its call once")
		assert.Equal(t, "second", calls[1].payload)
		assert.Empty(t, calls[1].previous, "nor is it counted in grpc-previous-rpc-attempts")
	})
}
