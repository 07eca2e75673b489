package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statementLog is a pgx tracer that records the first words of each
// statement, unquoted.
type statementLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	words := strings.Fields(d.SQL)
	l.mu.Lock()
	l.sqls = append(l.sqls, strings.ReplaceAll(strings.ToLower(strings.Join(words[:min(3, len(words))], " ")), `"`, ""))
	l.mu.Unlock()
	return ctx
}

func (*statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns what was recorded since the last take.
func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sqls
	l.sqls = nil
	return s
}

// A fresh key costs the claim, outside the handler's transaction, and one
// statement inside it (CompleteTx), and nothing after: the middleware does
// not save again. A replay costs one statement, which writes nothing.
func TestFreshKeyAddsTheClaimAndOneStatementInTheTransaction(t *testing.T) {
	t.Parallel()
	log := &statementLog{}
	pool := newPool(t, pg(t).NewDatabase(t), log)
	createOrders(t, pool)
	s, _ := newStore(t, pool)
	svc := &orderService{pool: pool, store: s}
	bare := httptest.NewServer(svc)
	t.Cleanup(bare.Close)
	srv := serve(t, idempotency.Options{Store: s}, svc)
	log.take()

	require.Equal(t, http.StatusCreated, post(t, bare, "", 1).status)
	alone := log.take()
	assert.Equal(t, []string{"begin", "insert into orders", "commit"}, alone, "the bare handler")

	require.Equal(t, http.StatusCreated, post(t, srv, "k", 2).status)
	keyed := log.take()
	assert.Equal(t, []string{
		"with live as", // the claim
		"begin", "insert into orders",
		"with saved as", // CompleteTx
		"commit",
	}, keyed)
	assert.LessOrEqual(t, len(keyed)-len(alone), 3, "at most the claim and 2 statements in the transaction")

	again := post(t, srv, "k", 2)
	require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, []string{"with live as"}, log.take(),
		"a replay: the claim, which reads what holds the key and takes nothing")
}
