// Package sundial is the Go SDK of Sundial, the webhook scheduling service:
// a client of its REST API and the tools a receiver needs to take its
// deliveries.
//
// # Calling the API
//
// NewClient makes a Client for one project's API key. Its fields group the
// operations of the API: Hooks (schedule, list, get, cancel, attempts, the
// bulk actions and bulk jobs), Project, APIKeys, SigningKeys, Endpoints,
// Channels, Sequences, OrderingKeys and Async (the ack and nack URLs of
// async deliveries). Every method takes a context, and every answer the
// API refuses is an *APIError (use errors.As) that carries the status, the
// machine code, the message and the fields at fault.
//
// Requests that are safe to repeat (GET, DELETE, a POST /hooks with its
// Idempotency-Key, which Schedule always sends, and the async answers, whose
// repeats change nothing) are retried on 429, 502, 503 and 504 and on
// network errors, honouring Retry-After, within RetryPolicy's bounds and the
// context's deadline. Other requests are sent once.
//
// Hooks.All walks every page of a listing with a range-over-func iterator.
//
// # Receiving deliveries
//
// Verify and ParseDelivery check a delivery's signature under Sundial's
// scheme (Sundial-Signature) or the Standard Webhooks scheme
// (webhook-signature), whichever it carries, with any of the project's
// signing keys (two during a rotation). NewHandler wraps a function that
// returns Ack, Accept or Nack into an http.Handler that answers Sundial as it
// expects.
//
// # Listening
//
// Client.Listen takes the project's deliveries over a WebSocket through the
// gateway, on a machine without a public address: the same handler results
// go back as ack, accept or nack. It reconnects by itself and stops on its
// context, or with ErrTicketRejected or ErrAccessRevoked when the server
// refuses it for good.
package sundial
