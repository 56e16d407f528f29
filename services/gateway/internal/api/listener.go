package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/sundial-run/sundial/services/gateway/internal/api/gen"
	"github.com/sundial-run/sundial/services/gateway/internal/listen"
)

// TicketIssuer issues listener tickets (listen.Tickets); r is the ticket
// request, whose address is the socket's when no public URL is set.
type TicketIssuer interface {
	Issue(ctx context.Context, r *http.Request, projectID, keyID uuid.UUID) (listen.Ticket, error)
}

// ListenerDeps is what the listener needs, set by app.New: the tickets
// (POST /v1/ws/ticket) and the WebSocket endpoint (GET /v1/ws), which
// takes a ticket instead of an API key.
type ListenerDeps struct {
	Tickets TicketIssuer
	Socket  http.Handler
}

// listenerTickets serves POST /v1/ws/ticket.
type listenerTickets struct {
	ListenerDeps
}

// socketPath is the WebSocket endpoint, outside the generated routes:
// OpenAPI cannot describe a WebSocket (the ticket operation does, in
// prose).
const socketPath = "/v1/ws"

// requestKey keeps the ticket request in its context.
type requestKey struct{}

// keepRequest is a strict-handler middleware that hands
// CreateListenerTicket its request, whose address the socket URL may be.
func keepRequest(f gen.StrictHandlerFunc, operationID string) gen.StrictHandlerFunc {
	if operationID != "CreateListenerTicket" {
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		r := c.Request()
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), requestKey{}, r)))
		return f(c, request)
	}
}

// CreateListenerTicket issues a ticket for a listener socket of the key's
// project (POST /v1/ws/ticket).
func (l listenerTickets) CreateListenerTicket(ctx context.Context, _ gen.CreateListenerTicketRequestObject) (gen.CreateListenerTicketResponseObject, error) {
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	keyID := keyOf(ctx)
	if r == nil || keyID == uuid.Nil || l.Tickets == nil {
		// app.New always wires the tickets and an identifying key verifier.
		return nil, internal(errors.New("listener tickets: not wired, or the key's id unknown"))
	}
	t, err := l.Tickets.Issue(ctx, r, projectOf(ctx), keyID)
	if err != nil {
		return nil, internal(err)
	}
	return gen.CreateListenerTicket200JSONResponse{Body: gen.ListenerTicketResponse{Data: gen.ListenerTicket{
		Ticket: t.Plain, Url: t.URL, ExpiresAt: t.ExpiresAt,
	}}}, nil
}
