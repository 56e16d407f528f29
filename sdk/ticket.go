package sundial

import (
	"context"
	"time"
)

// ListenerTicket opens one listener WebSocket: dial URL with the query
// ticket=<Ticket> (and forward=true to receive each delivery's request as
// it would be POSTed) before ExpiresAt. It is single use.
type ListenerTicket struct {
	Ticket    string    `json:"ticket"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ListenerTicket issues a ticket for a listener socket of the project
// (POST /v1/ws/ticket). A ticket unused is harmless, so the call is
// retried like a GET.
func (s *ProjectService) ListenerTicket(ctx context.Context) (ListenerTicket, error) {
	return get[ListenerTicket](ctx, s.c, call{method: "POST", path: "/ws/ticket", idempotent: true})
}
