package listen

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// TicketStore keeps the tickets' hashes (store.Queries).
type TicketStore interface {
	InsertListenerTicket(ctx context.Context, arg store.InsertListenerTicketParams) (time.Time, error)
	RedeemListenerTicket(ctx context.Context, ticketHash []byte) (store.RedeemListenerTicketRow, error)
}

// Ticket is what POST /v1/ws/ticket answers.
type Ticket struct {
	// Plain is the ticket itself: shown once, never stored or logged.
	Plain     string
	URL       string
	ExpiresAt time.Time
}

// Grant is what a redeemed ticket admits: a socket of the project, opened
// with the key.
type Grant struct {
	ProjectID   uuid.UUID
	ProjectName string
	KeyID       uuid.UUID
	// AsyncTimeout is the project's async timeout: the deadline of an
	// accept that names none.
	AsyncTimeout time.Duration
}

// Why a ticket admits nothing: the close codes 4001 and 4003.
var (
	ErrBadTicket = errors.New("unknown, used or expired ticket")
	ErrRevoked   = errors.New("the ticket's API key was revoked")
)

// ticketBytes is the ticket's entropy.
const ticketBytes = 32

// maxTicketLength bounds what is hashed: a ticket is 43 characters.
const maxTicketLength = 64

// Tickets issues and redeems tickets.
type Tickets struct {
	store     TicketStore
	publicURL string
}

// NewTickets returns the tickets kept in s; publicURL as Config.PublicURL.
func NewTickets(s TicketStore, publicURL string) *Tickets {
	return &Tickets{store: s, publicURL: strings.TrimRight(publicURL, "/")}
}

// Issue makes a ticket for a socket of the project, opened with the key;
// r is the ticket request, whose address the socket's URL is when no
// public URL is configured.
func (t *Tickets) Issue(ctx context.Context, r *http.Request, projectID, keyID uuid.UUID) (Ticket, error) {
	raw := make([]byte, ticketBytes)
	_, _ = rand.Read(raw) // never fails (crypto/rand)
	plain := base64.RawURLEncoding.EncodeToString(raw)
	hash := sha256.Sum256([]byte(plain))
	expires, err := t.store.InsertListenerTicket(ctx, store.InsertListenerTicketParams{
		TicketHash: hash[:], ProjectID: projectID, ApiKeyID: keyID, TtlSeconds: TicketTTL.Seconds(),
	})
	if err != nil {
		return Ticket{}, fmt.Errorf("insert listener ticket: %w", postgres.Translate(err))
	}
	return Ticket{Plain: plain, URL: t.socketURL(r), ExpiresAt: expires.UTC()}, nil
}

// socketURL is the WebSocket address: the public URL with ws for http and
// wss for https, or the request's own address.
func (t *Tickets) socketURL(r *http.Request) string {
	base := t.publicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	u, err := url.Parse(base)
	if err != nil {
		// Config.Validate checked it; the request's Host was parsed by
		// net/http.
		return base + "/v1/ws"
	}
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/ws"
	return u.String()
}

// Redeem deletes the ticket and returns what it admits: ErrBadTicket when
// it is unknown, used or expired, ErrRevoked when its key was revoked
// since.
func (t *Tickets) Redeem(ctx context.Context, plain string) (Grant, error) {
	if plain == "" || len(plain) > maxTicketLength {
		return Grant{}, ErrBadTicket
	}
	hash := sha256.Sum256([]byte(plain))
	row, err := t.store.RedeemListenerTicket(ctx, hash[:])
	switch err = postgres.Translate(err); {
	case errors.Is(err, postgres.ErrNotFound):
		return Grant{}, ErrBadTicket
	case err != nil:
		return Grant{}, fmt.Errorf("redeem listener ticket: %w", err)
	case !row.Live:
		return Grant{}, ErrBadTicket
	case !row.KeyUsable:
		return Grant{}, ErrRevoked
	}
	return Grant{
		ProjectID: row.ProjectID, ProjectName: row.ProjectName, KeyID: row.ApiKeyID,
		AsyncTimeout: time.Duration(row.AsyncTimeoutSecs) * time.Second,
	}, nil
}
