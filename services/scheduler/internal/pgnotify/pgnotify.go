// Package pgnotify keeps a PostgreSQL connection of its own LISTENing on a
// notification channel, reconnecting with a bounded backoff. The scheduler
// has three such wake-ups: hooks coming due soon (package claim's window),
// async answers recorded by the gateway (package asyncwait) and a project's
// listener back online (package holdrelease).
//
// A notification is only a hint: those sent while nobody listens are lost,
// so every (re)connection is reported to the caller, which then reads what
// it may have missed.
package pgnotify

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Backoff between reconnections: retryBase after the first failure,
// doubling up to maxRetry; a connection that got as far as listening
// starts again from retryBase.
const (
	retryBase = 100 * time.Millisecond
	maxRetry  = 5 * time.Second
)

// Listener listens on one channel.
type Listener struct {
	// Conn is the connection's configuration (a copy of the pool's).
	Conn *pgx.ConnConfig
	// Listen subscribes the connection: the channel's LISTEN query.
	Listen func(ctx context.Context, q *store.Queries) error
	// Connected is called after each LISTEN succeeds.
	Connected func()
	// Note is called with each notification's payload, on the connection's
	// goroutine: it must not block.
	Note func(payload string)
	// What names what is listened for, in the log line of a failure.
	What string
	Log  *slog.Logger
}

// Run listens until ctx is done, reconnecting after a failure.
func (l Listener) Run(ctx context.Context) {
	wait := retryBase
	for {
		listened, err := l.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			wait = retryBase
		}
		l.Log.WarnContext(ctx, "listening for "+l.What+" failed; reconnecting", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, maxRetry)
	}
}

// listenOnce connects, listens and hands over notifications until the
// connection fails or ctx ends; it reports whether it got as far as
// listening.
func (l Listener) listenOnce(ctx context.Context) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, l.Conn)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := l.Listen(ctx, store.New(conn)); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	l.Connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		l.Note(n.Payload)
	}
}
