package listen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/signing"
)

// Hub holds this gateway's listener sockets, by project. While it holds at
// least one socket of a project it subscribes to the project's delivery
// subject in the gateways' queue group, hands each delivery to one of the
// project's sockets in turn, and keeps the project's presence row
// connected (presence.go).
type Hub struct {
	cfg       Config
	log       *slog.Logger
	nc        *nats.Conn
	store     PresenceStore
	names     signing.Headers
	gatewayID string

	// base is the sockets' context: cancelled when Shutdown gives up
	// waiting for them to close.
	base context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	projects map[uuid.UUID]*projectSockets
	total    int // sockets of every project
	closing  bool
	sockets  sync.WaitGroup
	// changed wakes the presence writer when a project gains its first
	// socket or loses its last.
	changed chan struct{}

	presence presenceState
}

// projectSockets are one project's sockets on this gateway and the
// subscription that brings its deliveries.
type projectSockets struct {
	sockets []*socket
	next    int
	sub     *nats.Subscription
}

// NewHub returns a hub that writes its presence through s and receives
// deliveries on nc.
func NewHub(cfg Config, s PresenceStore, nc *nats.Conn, log *slog.Logger) (*Hub, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Intervals = cfg.Intervals.withDefaults()
	base, stop := context.WithCancel(context.Background())
	return &Hub{
		cfg: cfg, log: log, nc: nc, store: s, names: signing.NewHeaders(cfg.HeaderPrefix),
		gatewayID: newGatewayID(), base: base, stop: stop,
		projects: make(map[uuid.UUID]*projectSockets), changed: make(chan struct{}, 1),
		presence: presenceState{written: make(map[uuid.UUID]bool)},
	}, nil
}

// newGatewayID names this process in the presence rows.
func newGatewayID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "gw-" + hex.EncodeToString(b)
}

// add registers a socket; false when the hub is shutting down. The
// project's first socket subscribes to its deliveries, and the
// subscription is in force at the NATS server when add returns, so that a
// delivery routed to this gateway once the client is told it is connected
// finds it.
func (h *Hub) add(s *socket) (bool, error) {
	added, subscribed, err := h.register(s)
	if err != nil || !added {
		return added, err
	}
	if subscribed {
		if err := h.nc.FlushTimeout(storeTimeout); err != nil {
			h.log.Warn("listener subscription not confirmed", "project_id", s.grant.ProjectID, "error", err)
		}
	}
	return true, nil
}

// errFull refuses a socket over this gateway's or its project's bound; its
// text is the close reason.
type errFull string

func (e errFull) Error() string { return string(e) }

// register adds s to its project's sockets; subscribed when it is the
// project's first, and the project's deliveries were subscribed to. Over a
// bound it returns an errFull.
func (h *Hub) register(s *socket) (added, subscribed bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false, false, nil
	}
	p := h.projects[s.grant.ProjectID]
	switch {
	case p != nil && len(p.sockets) >= h.cfg.MaxProjectSockets:
		return false, false, errFull(fmt.Sprintf("the project has %d listeners on this server, its most; close one", len(p.sockets)))
	case h.total >= h.cfg.MaxSockets:
		return false, false, errFull("this server holds its most listeners; retry later")
	}
	if p == nil {
		sub, err := h.nc.QueueSubscribe(Subject+s.grant.ProjectID.String(), QueueGroup, h.receive)
		if err != nil {
			return false, false, fmt.Errorf("subscribe to the project's deliveries: %w", err)
		}
		p = &projectSockets{sub: sub}
		h.projects[s.grant.ProjectID] = p
		subscribed = true
		h.signal()
	}
	p.sockets = append(p.sockets, s)
	h.total++
	h.sockets.Add(1)
	return true, subscribed, nil
}

// remove unregisters a socket that added returned true for.
func (h *Hub) remove(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.projects[s.grant.ProjectID]
	if p == nil {
		return
	}
	for i, x := range p.sockets {
		if x == s {
			p.sockets = append(p.sockets[:i], p.sockets[i+1:]...)
			h.total--
			h.sockets.Done()
			break
		}
	}
	if len(p.sockets) == 0 {
		// Deliveries already received on it are answered by NATS' timeout
		// at the dispatcher: deferred, as when nobody listens.
		_ = p.sub.Unsubscribe()
		delete(h.projects, s.grant.ProjectID)
		h.signal()
	}
}

func (h *Hub) signal() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// receive is a delivery request from the dispatcher.
func (h *Hub) receive(m *nats.Msg) {
	var d eventv1.ListenerDelivery
	if err := proto.Unmarshal(m.Data, &d); err != nil {
		h.log.Warn("listener delivery unreadable", "subject", m.Subject, "error", err)
		return
	}
	h.route(&d, m, time.Now().Add(h.cfg.Intervals.AckTimeout))
}

// route hands a delivery to one of its project's sockets, in turn, or
// answers GONE when none takes it.
func (h *Hub) route(d *eventv1.ListenerDelivery, m *nats.Msg, deadline time.Time) {
	projectID, err := uuid.Parse(d.GetProjectId())
	if err == nil && time.Now().Before(deadline) {
		h.mu.Lock()
		p := h.projects[projectID]
		var order []*socket
		if p != nil && len(p.sockets) > 0 {
			n := len(p.sockets)
			order = make([]*socket, 0, n)
			for i := range n {
				order = append(order, p.sockets[(p.next+i)%n])
			}
			p.next = (p.next + 1) % n
		}
		h.mu.Unlock()
		for _, s := range order {
			if s.deliver(d, m, deadline) {
				return
			}
		}
	}
	h.reply(&pending{delivery: d, msg: m}, gone(""), time.Time{})
}

// reply answers a delivery request.
func (h *Hub) reply(p *pending, a *eventv1.ListenerAnswer, sent time.Time) {
	a = withTiming(a, sent)
	h.log.Debug("listener delivery answered", "hook_id", p.delivery.GetHookId(),
		"project_id", p.delivery.GetProjectId(), "attempt", p.delivery.GetAttempt(),
		"answer", a.GetKind().String(), "connection_id", a.GetConnectionId(), "duration", a.GetDuration().AsDuration())
	if p.msg == nil || p.msg.Reply == "" {
		return
	}
	b, err := proto.Marshal(a)
	if err == nil {
		err = p.msg.Respond(b)
	}
	if err != nil {
		h.log.Warn("listener answer not sent", "hook_id", p.delivery.GetHookId(), "error", err)
	}
}

// all lists the open sockets.
func (h *Hub) all() []*socket {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*socket
	for _, p := range h.projects {
		out = append(out, p.sockets...)
	}
	return out
}

// counts is the number of sockets per project.
func (h *Hub) counts() map[uuid.UUID]int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[uuid.UUID]int32, len(h.projects))
	for id, p := range h.projects {
		out[id] = int32(len(p.sockets))
	}
	return out
}

// shutdownMessage tells clients to reconnect, to another replica.
const shutdownMessage = "this server is shutting down; reconnect"

// Shutdown tells every client the gateway is going away (closing), closes
// the sockets (1001) and waits for them, at most until ctx ends, then
// marks the projects' presence disconnected. New sockets are refused from
// its start.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	closing := encode(closingMessage{Type: typeClosing, Reason: "shutdown", Message: shutdownMessage})
	for _, s := range h.all() {
		s.send(closing)
		s.end(websocket.StatusGoingAway, "shutdown")
	}
	done := make(chan struct{})
	go func() { h.sockets.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.stop() // every read and write returns at once
		<-done
	}
	h.stop()
	return h.reconcile(ctx)
}
