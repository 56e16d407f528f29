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
	h := make(http.Header, 12)
	ack, nack := c.asyncURLs(r)
	// Prepare's values share one array, as SetScheme's do: this runs for
	// every delivery, and a slice per header was an allocation each.
	values := [...]string{"application/json", c.userAgent, r.Authorization, ack, nack}
	one := func(i int) []string { return values[i : i+1 : i+1] }
	h["Content-Type"] = one(0)
	h["User-Agent"] = one(1)
	c.header.signed.SetScheme(h, r.Scheme, r.HookID, r.Keys, sentAt.Unix(), body)
	if r.Authorization != "" {
		h["Authorization"] = one(2)
	}
	// On every delivery, not only those a receiver will answer 202: the
	// receiver decides only once it has the request.
	// Spelled as documented (Sundial-Ack-URL), not canonicalised.
	h[c.header.ackURL] = one(3)
	h[c.header.nackURL] = one(4)
	return Prepared{SentAt: sentAt, Body: body, Header: h, AckURL: ack, NackURL: nack}
}
