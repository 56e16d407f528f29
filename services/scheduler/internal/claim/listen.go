package claim

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/scheduler/internal/pgnotify"
	"github.com/sundial-run/sundial/services/scheduler/internal/store"
)

// Notifications. The trigger of migration 00006 announces every insert or
// change that makes a hook due within notifyAhead; the Window listens on a
// connection of its own and queues each announced hook at once, instead of
// waiting for the next prefetch read.

// notifyAhead is how far ahead migration 00006's trigger announces hooks:
// the window may hold hooks that far ahead, whatever its prefetch range.
const notifyAhead = 10 * time.Second

// note is one hook the trigger announced; zero id means "re-read".
type note struct {
	id    uuid.UUID
	runAt time.Time
	keyed bool // the hook has an ordering key
}

// listen forwards the trigger's notifications to Run on a connection of
// its own. After each (re)connect it asks for a prefetch, since
// notifications sent while it was away are lost.
func (w *Window) listen(ctx context.Context) {
	pgnotify.Listener{
		Conn:   w.connCf,
		Listen: func(ctx context.Context, q *store.Queries) error { return q.ListenDue(ctx) },
		Connected: func() {
			w.nudge()
			w.listeningOnce.Do(func() { close(w.listening) })
		},
		Note: w.forward,
		What: "due hooks",
		Log:  w.log,
	}.Run(ctx)
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

// parseNote reads "<uuid> <run_at in Unix microseconds>", followed by
// " k" for a hook with an ordering key (migration 00041).
func parseNote(payload string) (note, bool) {
	fields := strings.Split(payload, " ")
	if len(fields) < 2 || len(fields) > 3 || len(fields) == 3 && fields[2] != "k" {
		return note{}, false
	}
	id, err := uuid.Parse(fields[0])
	if err != nil {
		return note{}, false
	}
	micros, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return note{}, false
	}
	return note{id: id, runAt: time.UnixMicro(micros), keyed: len(fields) == 3}, true
}
