package delivery

import (
	"net/http"
	"time"
)

// Prepared is one delivery's request as its receiver gets it: the body,
// every header (signatures and async URLs included) and the async URLs,
// signed at SentAt. The HTTPS delivery POSTs it (Send); a listener's
// delivery hands it to the gateway holding the listener's socket
// (docs/listener.md, "Routing"). Both take it from Prepare, so the
// delivery's contract is made in one place.
type Prepared struct {
	SentAt time.Time
	Body   []byte
	Header http.Header
	// AckURL and NackURL are the attempt's async answer URLs, also in
	// Header.
	AckURL, NackURL string
}

// Prepare builds r's delivery signed at sentAt: the body's postedAt and
// the signature's timestamp are sentAt, which is when the delivery goes
// out (a receiver checks their age). r must have a signing key.
func (c *Client) Prepare(r Request, sentAt time.Time) Prepared {
	body := Body(r, sentAt)
	h := make(http.Header, 10)
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", c.userAgent)
	c.header.signed.SetScheme(h, r.Scheme, r.HookID, r.Keys, sentAt.Unix(), body)
	if r.Authorization != "" {
		h.Set("Authorization", r.Authorization)
	}
	// On every delivery, not only those a receiver will answer 202: the
	// receiver decides only once it has the request.
	// Spelled as documented (Sundial-Ack-URL), not canonicalised.
	ack, nack := c.asyncURLs(r)
	h[c.header.ackURL] = []string{ack}
	h[c.header.nackURL] = []string{nack}
	return Prepared{SentAt: sentAt, Body: body, Header: h, AckURL: ack, NackURL: nack}
}
