package listen

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/signing"
)

// The messages of the protocol (docs/listener.md, "Wire protocol"): one
// JSON object per text frame, type first. Times are RFC 3339 in UTC.

// Server message types.
const (
	typeConnected  = "connected"
	typeHook       = "hook"
	typePing       = "ping"
	typeClosing    = "closing"
	typeError      = "error"
	typeAckTimeout = "ack_timeout"
	typeAsyncAck   = "async_ack"
)

// Client message types.
const (
	typePong   = "pong"
	typeAck    = "ack"
	typeAccept = "accept"
	typeNack   = "nack"
)

// Codes of the error message: the client's message was not used, and
// nothing changed.
const (
	CodeInvalidJSON     = "invalid_json"
	CodeUnknownType     = "unknown_type"
	CodeInvalidMessage  = "invalid_message"
	CodeUnknownHook     = "unknown_hook"
	CodeAlreadyAnswered = "already_answered"
)

type connectedMessage struct {
	Type         string `json:"type"`
	ConnectionID string `json:"connectionId"`
	ProjectID    string `json:"projectId"`
	ProjectName  string `json:"projectName"`
	ServerTime   string `json:"serverTime"`
}

type hookMessage struct {
	Type           string          `json:"type"`
	ID             string          `json:"id"`
	Path           string          `json:"path"`
	Data           json.RawMessage `json:"data"`
	PostAt         string          `json:"postAt"`
	PostedAt       string          `json:"postedAt"`
	CreatedAt      string          `json:"createdAt"`
	UpdatedAt      string          `json:"updatedAt"`
	Timestamp      int64           `json:"timestamp"`
	Attempt        int32           `json:"attempt"`
	MaxAttempts    int32           `json:"maxAttempts"`
	AckURL         string          `json:"ackUrl"`
	NackURL        string          `json:"nackUrl"`
	ForwardRequest *forwardRequest `json:"forwardRequest,omitempty"`
}

// forwardRequest is the delivery as it would be POSTed, with the fields
// posthook-node's clients read.
type forwardRequest struct {
	Body              string            `json:"body"`
	Headers           map[string]string `json:"headers"`
	Signature         string            `json:"signature"`
	Authorization     string            `json:"authorization,omitempty"`
	PosthookID        string            `json:"posthookId"`
	PosthookTimestamp string            `json:"posthookTimestamp"`
	PosthookSignature string            `json:"posthookSignature"`
}

type pingMessage struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
}

type closingMessage struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type errorMessage struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

type ackTimeoutMessage struct {
	Type    string `json:"type"`
	HookID  string `json:"hookId"`
	Attempt int32  `json:"attempt"`
}

type asyncAckMessage struct {
	Type     string `json:"type"`
	HookID   string `json:"hookId"`
	AckURL   string `json:"ackUrl"`
	NackURL  string `json:"nackUrl"`
	Deadline string `json:"deadline"`
}

// clientMessage is any client message; which fields matter depends on its
// type.
type clientMessage struct {
	Type   string `json:"type"`
	HookID string `json:"hookId"`
	// Timeout of an accept, in seconds: read by acceptTimeout, so that a
	// bad one is told apart from bad JSON.
	Timeout json.RawMessage `json:"timeout"`
	Error   string          `json:"error"`
}

// rfc3339 formats t as the protocol's times are.
func rfc3339(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// encode marshals a server message; the messages are plain structs of
// strings and numbers (hook data is checked JSON), so it cannot fail.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("listen: encode: " + err.Error())
	}
	return b
}

// hookFrame is the hook message of d, with forwardRequest when forward
// (the socket was opened with forward=true); names are the signed headers'
// names under the gateway's prefix.
func hookFrame(d *eventv1.ListenerDelivery, names signing.Headers, forward bool) []byte {
	data := json.RawMessage(d.GetData())
	if !json.Valid(data) {
		// The dispatcher sends the hook's stored JSON; never seen otherwise.
		data = json.RawMessage("null")
	}
	m := hookMessage{
		Type: typeHook, ID: d.GetHookId(), Path: d.GetPath(), Data: data,
		PostAt: rfc3339(d.GetPostAt().AsTime()), PostedAt: rfc3339(d.GetPostedAt().AsTime()),
		CreatedAt: rfc3339(d.GetCreatedAt().AsTime()), UpdatedAt: rfc3339(d.GetUpdatedAt().AsTime()),
		Timestamp: d.GetTimestamp(), Attempt: d.GetAttempt(), MaxAttempts: d.GetMaxAttempts(),
		AckURL: d.GetAckUrl(), NackURL: d.GetNackUrl(),
	}
	if forward {
		m.ForwardRequest = newForwardRequest(d, names)
	}
	return encode(m)
}

func newForwardRequest(d *eventv1.ListenerDelivery, names signing.Headers) *forwardRequest {
	headers := d.GetHeaders()
	if headers == nil {
		headers = map[string]string{}
	}
	get := func(name string) string {
		if v, ok := headers[name]; ok {
			return v
		}
		for k, v := range headers {
			if strings.EqualFold(k, name) {
				return v
			}
		}
		return ""
	}
	return &forwardRequest{
		Body: string(d.GetBody()), Headers: headers,
		Signature:         get(names.LegacySignature),
		Authorization:     get("Authorization"),
		PosthookID:        get(names.ID),
		PosthookTimestamp: get(names.Timestamp),
		PosthookSignature: get(names.Signature),
	}
}
