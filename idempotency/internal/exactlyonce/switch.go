package exactlyonce

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/idempotency"
)

// Switch is a Store that fails every call while it is down, as a store
// that cannot be reached does; otherwise it passes calls to the Store it
// wraps. Its Down method fits Config.Down.
type Switch struct {
	idempotency.Store
	down atomic.Bool
}

// NewSwitch wraps s, up.
func NewSwitch(s idempotency.Store) *Switch { return &Switch{Store: s} }

// Down takes the store down, or brings it back up.
func (s *Switch) Down(down bool) { s.down.Store(down) }

var errDown = errors.New("exactlyonce: store down")

func (s *Switch) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	if s.down.Load() {
		return idempotency.Claim{}, errDown
	}
	return s.Store.Claim(ctx, key, token, fp, lease)
}

func (s *Switch) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.Renew(ctx, key, token, lease)
}

func (s *Switch) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.Complete(ctx, key, token, fp, result, ttl)
}

func (s *Switch) Release(ctx context.Context, key, token string) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.Release(ctx, key, token)
}
