package sundial

import (
	"context"
	"fmt"
)

// AsyncService answers deliveries that were answered 202, through the ack
// and nack URLs each delivery carries (Delivery.AckURL, Delivery.NackURL).
// The URL's token is its only credential: no API key is sent with it.
//
// A repeat of an answer changes nothing (the first answer wins), so the
// answers are retried like GETs.
type AsyncService struct{ c *Client }

// AsyncAnswer is the gateway's reply: Status is "completed" after an ack,
// "nacked" after a nack, or for a repeated answer the hook's current
// status.
type AsyncAnswer struct {
	Status string `json:"status"`
}

// Ack completes the delivery's hook (POST to its Sundial-Ack-URL). body,
// when not nil, is any JSON value up to 64 KiB kept with the attempt.
// Errors: 404 (hook gone), 409 (the URL is an older delivery's), 410 (the
// async timeout passed), as *APIError.
func (s *AsyncService) Ack(ctx context.Context, ackURL string, body any) (AsyncAnswer, error) {
	if ackURL == "" {
		return AsyncAnswer{}, fmt.Errorf("%w: ackURL is empty (the delivery had no Sundial-Ack-URL)", ErrMissingID)
	}
	return get[AsyncAnswer](ctx, s.c, call{method: "POST", absolute: ackURL, body: body, idempotent: true})
}

// Nack fails the delivery's attempt (POST to its Sundial-Nack-URL): the hook
// is retried with its retry settings, or fails. reason, when not empty, is
// kept with the attempt as {"reason": reason}.
func (s *AsyncService) Nack(ctx context.Context, nackURL string, reason string) (AsyncAnswer, error) {
	if nackURL == "" {
		return AsyncAnswer{}, fmt.Errorf("%w: nackURL is empty (the delivery had no Sundial-Nack-URL)", ErrMissingID)
	}
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	return get[AsyncAnswer](ctx, s.c, call{method: "POST", absolute: nackURL, body: body, idempotent: true})
}
