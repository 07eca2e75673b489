package retryhttp

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of StaleOptions.
const (
	defaultStaleMaxBytes      = 32 << 20
	defaultStaleMaxEntryBytes = 1 << 20
	defaultStaleMaxAge        = 24 * time.Hour
)

// Bounds of a StaleCache that no option changes.
const (
	// maxVariants is how many responses a URL keeps, one per set of the
	// request fields its Vary names: a server that varies on a field with
	// endless values (User-Agent) cannot fill the cache with one URL.
	maxVariants = 8
	// minEntryCost is the least an entry counts for against MaxBytes,
	// whatever the size of its body, header fields and key: about what the
	// entry itself and its maps take, so that many empty responses cannot
	// hold more memory than MaxBytes says.
	minEntryCost = 512
)

// ErrInvalidStaleOptions is matched by the error of [NewStaleCache] for
// options it cannot honour.
var ErrInvalidStaleOptions = errors.New("retryhttp: invalid stale cache options")

// StaleOptions configures a [StaleCache]. The zero value keeps up to 32 MiB
// of responses of up to 1 MiB each, for up to a day.
type StaleOptions struct {
	// MaxBytes bounds the bytes the cache holds: bodies, header fields and
	// keys (method, URL, the values of the fields Vary names), each entry
	// counted as 512 bytes at least [32 MiB]. Past it, the least recently
	// stored or served entries are evicted.
	MaxBytes int64
	// MaxEntryBytes bounds one entry: its body, header fields and key [1
	// MiB, or MaxBytes if that is less]. A larger response is not stored,
	// and reaches the caller as it came.
	MaxEntryBytes int64
	// MaxAge is the oldest an entry may be served at, whatever an origin's
	// stale-if-error or a caller's WithStaleIfError allows [24h]. An entry
	// older than that is dropped when it is looked up.
	MaxAge time.Duration
	// PerCredential stores the responses to requests that carry an
	// Authorization or a Cookie header too, each under a SHA-256 digest of
	// those headers, so that a response is served only to a request with
	// the same credentials [false: such responses are never stored]. Set it
	// only where every credential's responses may stay in this process's
	// memory.
	PerCredential bool
}

// StaleCache keeps the last successful responses to GET and HEAD requests,
// so that a [Transport] whose Stale it is can answer a request that failed
// for good with one of them (see [Transport.Stale]). It is not an HTTP
// cache: every request still goes to its origin, and a stored response is
// only ever served in place of a failure.
//
// It is bounded in bytes, with least-recently-used eviction, and starts no
// goroutine: an entry past MaxAge is dropped when it is looked up or
// evicted. One StaleCache may serve several Transports, and is safe for
// concurrent use.
type StaleCache struct {
	opts StaleOptions // with defaults

	mu      sync.Mutex
	byKey   map[string][]*staleEntry // variants by primary key, oldest first
	newest  *staleEntry              // the LRU list, most recently used first
	oldest  *staleEntry
	bytes   int64
	entries int
}

// NewStaleCache returns an empty StaleCache, or an error matching
// ErrInvalidStaleOptions for a negative bound or a MaxEntryBytes above
// MaxBytes.
func NewStaleCache(o StaleOptions) (*StaleCache, error) {
	switch {
	case o.MaxBytes < 0 || o.MaxEntryBytes < 0 || o.MaxAge < 0:
		return nil, fmt.Errorf("%w: negative bound (MaxBytes %d, MaxEntryBytes %d, MaxAge %v)",
			ErrInvalidStaleOptions, o.MaxBytes, o.MaxEntryBytes, o.MaxAge)
	case o.MaxBytes > 0 && o.MaxEntryBytes > o.MaxBytes:
		return nil, fmt.Errorf("%w: MaxEntryBytes %d is above MaxBytes %d", ErrInvalidStaleOptions, o.MaxEntryBytes, o.MaxBytes)
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultStaleMaxBytes
	}
	if o.MaxEntryBytes == 0 {
		o.MaxEntryBytes = min(defaultStaleMaxEntryBytes, o.MaxBytes)
	}
	if o.MaxAge == 0 {
		o.MaxAge = defaultStaleMaxAge
	}
	return &StaleCache{opts: o, byKey: make(map[string][]*staleEntry)}, nil
}

// Len returns how many responses the cache holds, and their bytes as
// counted against MaxBytes.
func (s *StaleCache) Len() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries, s.bytes
}

// staleEntry is one stored response. Once put in the cache, only its list
// links change: the rest is read without the lock.
type staleEntry struct {
	key      string
	vary     []string // the request fields its Vary names
	varyVals []string // the storing request's values of them
	size     int64    // its body, header fields and key, for MaxEntryBytes
	cost     int64    // what it counts for against MaxBytes: size, or minEntryCost

	status        int
	statusText    string
	proto         string
	protoMajor    int
	protoMinor    int
	header        http.Header // a copy, never handed out
	body          []byte
	contentLength int64 // of a HEAD response, as it came

	// What the age of RFC 9111 §4.2.3 is made of.
	requestTime, responseTime time.Time
	date                      time.Time // the Date field; zero if none, or on a fake clock
	ageValue                  time.Duration
	freshness                 time.Duration
	staleIfError              time.Duration // the origin's; -1 if none

	prev, next *staleEntry // toward newest, toward oldest
}

// key returns req's primary key: method, URL and, for a credentialed
// request, the digest of its credentials; ok is false when the cache must
// neither store nor serve req's responses.
func (s *StaleCache) key(req *http.Request) (string, bool) {
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	k := m + " " + req.URL.String()
	if credentialed(req) {
		if !s.opts.PerCredential {
			return "", false
		}
		h := sha256.New()
		for _, name := range [...]string{"Authorization", "Cookie"} {
			for _, v := range req.Header.Values(name) {
				h.Write([]byte(v))
				h.Write([]byte{0})
			}
			h.Write([]byte{1}) // so that values cannot move between the two
		}
		k += "\x00" + string(h.Sum(nil))
	}
	return k, true
}

// newEntry makes the entry of resp, without its body, for a response that
// mayStore allowed; nil if its headers alone exceed MaxEntryBytes. Its Date
// counts toward its age only when sent and received are wall times: a
// fake clock's are not comparable with a server's clock.
func (s *StaleCache) newEntry(req *http.Request, resp *http.Response, cc *cacheControl, key string, sent, received time.Time, wall bool) *staleEntry {
	e := &staleEntry{
		key: key, status: resp.StatusCode, statusText: resp.Status, proto: resp.Proto,
		protoMajor: resp.ProtoMajor, protoMinor: resp.ProtoMinor, header: resp.Header.Clone(),
		contentLength: resp.ContentLength, requestTime: sent, responseTime: received,
		staleIfError: cc.staleIfError, ageValue: max(deltaSeconds(resp.Header.Get("Age")), 0),
	}
	if e.header == nil {
		e.header = make(http.Header)
	}
	e.header.Del("Age") // set afresh on each stale answer
	// Hop-by-hop fields describe the connection the response came on, not
	// the response (RFC 9111 §3.1, RFC 9110 §7.6.1): not kept.
	for _, f := range e.header.Values("Connection") {
		for _, n := range strings.Split(f, ",") {
			e.header.Del(strings.TrimSpace(n))
		}
	}
	for _, n := range [...]string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer"} {
		e.header.Del(n)
	}
	var date time.Time
	if v := resp.Header.Get("Date"); v != "" {
		date, _ = http.ParseTime(v) // the zero time if malformed
	}
	e.freshness = cc.freshness(resp.Header, date)
	if wall {
		e.date = date
	}
	e.vary = varyNames(resp.Header)
	e.size = int64(len(key) + len(e.statusText) + len(e.proto))
	for _, n := range e.vary {
		v := fieldValue(req.Header, n)
		e.varyVals = append(e.varyVals, v)
		e.size += int64(len(n) + len(v))
	}
	for k, vs := range e.header {
		e.size += int64(len(k))
		for _, v := range vs {
			e.size += int64(len(v))
		}
	}
	if e.size > s.opts.MaxEntryBytes {
		return nil
	}
	return e
}

// bodyRoom is how many body bytes e may have and still fit MaxEntryBytes.
func (s *StaleCache) bodyRoom(e *staleEntry) int64 { return s.opts.MaxEntryBytes - e.size }

// matches reports whether e was stored for a request with h's values of
// the fields e's Vary names.
func (e *staleEntry) matches(h http.Header) bool {
	for i, n := range e.vary {
		if fieldValue(h, n) != e.varyVals[i] {
			return false
		}
	}
	return true
}

// age is e's current age at now (RFC 9111 §4.2.3), on the Transport's clock.
func (e *staleEntry) age(now time.Time) time.Duration {
	apparent := time.Duration(0)
	if !e.date.IsZero() {
		apparent = max(e.responseTime.Sub(e.date), 0)
	}
	corrected := e.ageValue + max(e.responseTime.Sub(e.requestTime), 0)
	return max(apparent, corrected) + max(now.Sub(e.responseTime), 0)
}

// put stores e, with its body, in place of any entry of the same key and
// Vary values, and evicts the least recently used entries past MaxBytes.
func (s *StaleCache) put(e *staleEntry, body []byte) {
	e.body = body
	e.size += int64(len(body))
	e.cost = max(e.size, minEntryCost)
	if e.size > s.opts.MaxEntryBytes || e.cost > s.opts.MaxBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.byKey[e.key]
	for _, old := range vs {
		if sameVary(old, e) {
			s.remove(old)
			break
		}
	}
	if vs = s.byKey[e.key]; len(vs) >= maxVariants {
		s.remove(vs[0])
	}
	s.byKey[e.key] = append(s.byKey[e.key], e)
	s.pushNewest(e)
	s.bytes += e.cost
	s.entries++
	for s.bytes > s.opts.MaxBytes && s.oldest != nil {
		s.remove(s.oldest)
	}
}

func sameVary(a, b *staleEntry) bool {
	if len(a.vary) != len(b.vary) {
		return false
	}
	for i := range a.vary {
		if a.vary[i] != b.vary[i] || a.varyVals[i] != b.varyVals[i] {
			return false
		}
	}
	return true
}

// get returns the entry that answers req, whose primary key is key, and its
// age at now; nil if there is none, or it is past MaxAge (it is dropped
// then). The entry becomes the most recently used.
func (s *StaleCache) get(req *http.Request, key string, now time.Time) (*staleEntry, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byKey[key] {
		if !e.matches(req.Header) {
			continue
		}
		age := e.age(now)
		if age > s.opts.MaxAge {
			s.remove(e)
			return nil, 0
		}
		s.unlink(e)
		s.pushNewest(e)
		return e, age
	}
	return nil, 0
}

// remove drops e from the cache. s.mu is held.
func (s *StaleCache) remove(e *staleEntry) {
	vs := s.byKey[e.key]
	for i, v := range vs {
		if v == e {
			vs = append(vs[:i:i], vs[i+1:]...) // a fresh array: no stale pointer left behind
			break
		}
	}
	if len(vs) == 0 {
		delete(s.byKey, e.key)
	} else {
		s.byKey[e.key] = vs
	}
	s.unlink(e)
	s.bytes -= e.cost
	s.entries--
}

func (s *StaleCache) pushNewest(e *staleEntry) {
	e.prev, e.next = nil, s.newest
	if s.newest != nil {
		s.newest.prev = e
	}
	s.newest = e
	if s.oldest == nil {
		s.oldest = e
	}
}

func (s *StaleCache) unlink(e *staleEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else if s.newest == e {
		s.newest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else if s.oldest == e {
		s.oldest = e.prev
	}
	e.prev, e.next = nil, nil
}

// ageHeader is the Age field of a response of age d: whole seconds (RFC 9111
// §5.1).
func ageHeader(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10)
}
