package claim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Notifications. The trigger of migration 00006 announces every insert or
// change that makes a hook due within notifyAhead; the Window listens on a
// connection of its own and queues each announced hook at once, instead of
// waiting for the next prefetch read.

// notifyAhead is how far ahead migration 00006's trigger announces hooks:
// the window may hold hooks that far ahead, whatever its prefetch range.
const notifyAhead = 10 * time.Second

// listenRetryBase is the first wait before reconnecting the listener; it
// doubles up to maxErrorBackoff.
const listenRetryBase = 100 * time.Millisecond

// note is one hook the trigger announced; zero id means "re-read".
type note struct {
	id    uuid.UUID
	runAt time.Time
}

// listen forwards the trigger's notifications to Run, reconnecting with a
// bounded backoff. After each (re)connect it asks for a prefetch, since
// notifications sent while it was away are lost.
func (w *Window) listen(ctx context.Context) {
	failures := 0
	for {
		connected, err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures = 0
		}
		failures++
		wait := errorBackoff(listenRetryBase, failures)
		w.log.Warn("listening for due hooks failed; reconnecting", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce connects, listens and forwards notifications until the
// connection fails or ctx ends; it reports whether it got as far as
// listening.
func (w *Window) listenOnce(ctx context.Context) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, w.connCf)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if err := store.New(conn).ListenDue(ctx); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	w.nudge()
	w.listeningOnce.Do(func() { close(w.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		w.forward(n.Payload)
	}
}

// forward hands one notification to Run without ever blocking the
// connection: when Run is behind, or the payload is not understood, a
// prefetch re-reads everything instead.
func (w *Window) forward(payload string) {
	n, ok := parseNote(payload)
	if !ok {
		w.nudge()
		return
	}
	select {
	case w.notes <- n:
	default:
		w.nudge()
	}
}

func (w *Window) nudge() {
	select {
	case w.nudges <- struct{}{}:
	default:
	}
}

// parseNote reads "<uuid> <run_at in Unix microseconds>".
func parseNote(payload string) (note, bool) {
	idText, microsText, ok := strings.Cut(payload, " ")
	if !ok {
		return note{}, false
	}
	id, err := uuid.Parse(idText)
	if err != nil {
		return note{}, false
	}
	micros, err := strconv.ParseInt(microsText, 10, 64)
	if err != nil {
		return note{}, false
	}
	return note{id: id, runAt: time.UnixMicro(micros)}, true
}
