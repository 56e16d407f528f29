package listen

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// Redeemer redeems tickets (Tickets).
type Redeemer interface {
	Redeem(ctx context.Context, plain string) (Grant, error)
}

// Handler serves GET /v1/ws: it redeems the ticket, accepts the WebSocket
// and serves it until it closes. A bad ticket, a revoked key or a fault
// is told by the close code, the socket being accepted first, since a
// WebSocket client sees no HTTP status.
func (h *Hub) Handler(tickets Redeemer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		grant, redeemErr := tickets.Redeem(r.Context(), q.Get("ticket"))
		// The server's read and write timeouts are for requests; a socket
		// lives for hours, and its liveness is the protocol's pings.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
			// The ticket is the credential, not the page's origin, and the
			// command-line clients send none.
			InsecureSkipVerify: true,
		})
		if err != nil {
			return // Accept answered the request
		}
		switch {
		case errors.Is(redeemErr, ErrBadTicket):
			_ = ws.Close(StatusBadTicket, "invalid or expired ticket")
			return
		case errors.Is(redeemErr, ErrRevoked):
			_ = ws.Close(StatusForbidden, "API key revoked or project deleted")
			return
		case redeemErr != nil:
			h.log.Error("listener ticket not redeemed", "error", redeemErr)
			_ = ws.Close(websocket.StatusInternalError, "internal error; reconnect")
			return
		}
		ws.SetReadLimit(MaxMessageBytes)
		h.serve(ws, grant, q.Get("forward") == "true")
	})
}

// serve runs an accepted socket of the grant's project.
func (h *Hub) serve(ws *websocket.Conn, g Grant, forward bool) {
	s := newSocket(h, uuid.NewString(), g, forward, ws)
	added, err := h.add(s)
	var full errFull
	switch {
	case errors.As(err, &full):
		h.log.Debug("listener socket refused", "project_id", g.ProjectID, "reason", string(full))
		_ = ws.Close(websocket.StatusTryAgainLater, string(full))
		return
	case err != nil:
		h.log.Error("listener socket refused", "project_id", g.ProjectID, "error", err)
		_ = ws.Close(websocket.StatusInternalError, "internal error; reconnect")
		return
	case !added:
		_ = ws.Write(h.base, websocket.MessageText,
			encode(closingMessage{Type: typeClosing, Reason: "shutdown", Message: shutdownMessage}))
		_ = ws.Close(websocket.StatusGoingAway, "shutdown")
		return
	}
	s.send(encode(connectedMessage{
		Type: typeConnected, ConnectionID: s.id, ProjectID: g.ProjectID.String(),
		ProjectName: g.ProjectName, ServerTime: rfc3339(time.Now()),
	}))
	h.log.Debug("listener socket opened", "connection_id", s.id, "project_id", g.ProjectID, "forward", forward)
	s.logClose(h.log, s.run(h.base))
}
