// Package listener sends a hook's delivery to the project's listener (the
// `sundial listen` command or an SDK client, docs/listener.md): a core NATS
// request of a ListenerDelivery to sundial.listen.deliver.<projectId>,
// which the gateways holding the project's sockets answer in the queue
// group sundial-listen, with what the listener said.
package listener

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// DefaultTimeout is how long a request waits for the gateway's answer: the
// gateway waits up to 10 s for the listener, plus 2 s for the reply to
// travel. A request unanswered by then was lost with its gateway.
const DefaultTimeout = 12 * time.Second

// ErrNoListener: no gateway holds a socket of the project now (NATS had no
// responder for the subject). Nothing was sent.
var ErrNoListener = errors.New("no gateway holds a listener of the project")

// ErrNoAnswer: the gateway did not answer in time (it died holding the
// delivery, or the reply was lost). The listener may have got the hook.
var ErrNoAnswer = errors.New("no answer from the listener's gateway")

// Requester sends listener deliveries on a NATS connection.
type Requester struct {
	nc      *nats.Conn
	timeout time.Duration
}

// New returns a Requester that waits up to timeout (0: DefaultTimeout)
// for each answer.
func New(nc *nats.Conn, timeout time.Duration) *Requester {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Requester{nc: nc, timeout: timeout}
}

// Deliver sends d to its project's listener and returns the gateway's
// answer. Errors: ErrNoListener, ErrNoAnswer, ctx's error, or another
// (a connection fault, a reply that does not decode), wrapped.
func (r *Requester) Deliver(ctx context.Context, d *eventv1.ListenerDelivery) (*eventv1.ListenerAnswer, error) {
	data, err := proto.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode listener delivery: %w", err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	msg, err := r.nc.RequestWithContext(reqCtx, event.ListenerDeliverSubject(d.GetProjectId()), data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, ErrNoListener
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("listener request: %w", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return nil, ErrNoAnswer
	case err != nil:
		return nil, fmt.Errorf("listener request: %w", err)
	}
	var a eventv1.ListenerAnswer
	if err := proto.Unmarshal(msg.Data, &a); err != nil {
		return nil, fmt.Errorf("decode listener answer: %w", err)
	}
	return &a, nil
}
