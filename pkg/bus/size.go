package bus

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Sizes agree end to end (docs/security.md). A NATS server refuses a
// message whose headers and payload together exceed its max_payload
// (nats-server's default: 1 MiB), and a DueHook carries its hook's data.
// So the contract is here, in one place:
//
//   - every service refuses to start on a server whose max_payload is under
//     MinMaxPayload (CheckMaxPayload), the size the fixed budgets of
//     batched messages (DueBatchBytes here, the dispatcher's results) are
//     made for;
//   - the gateway accepts at most MaxHookData(max_payload) bytes of hook
//     data, however high SUNDIAL_MAX_DATA_BYTES is, so that a hook it
//     accepts always fits in a due message of its own;
//   - due messages hold at most DueBatchBytes of encoded hooks, or one
//     hook alone (DueBatch, SplitDue), whoever publishes them: the
//     scheduler's claims and the dispatcher's hand-backs.

// MinMaxPayload is the smallest NATS max_payload Sundial runs with:
// nats-server's default.
const MinMaxPayload = 1 << 20

// DueEnvelope bounds what a due message of one hook holds besides the
// hook's data: the DueHook's other fields (two uuids, five timestamps, its
// numbers, and its path and URL: a path of at most 2,048 bytes, the
// gateway's hook.MaxPathBytes, twice, and a domain of at most 253 bytes and
// a port), the DueHooks wrapper, and the message's headers (Nats-Msg-Id,
// the type, and the trace context, whose traceparent, tracestate and
// baggage W3C caps at 55, 512 and 8,192 bytes). That is under 14 KiB;
// the rest is margin.
const DueEnvelope = 16 << 10

// MaxHookData is the most hook data a server with maxPayload carries in a
// due message.
func MaxHookData(maxPayload int64) int64 {
	return maxPayload - DueEnvelope
}

// CheckMaxPayload returns the max_payload of the server nc is connected to,
// or an error saying what to change when it is under MinMaxPayload. Call
// it once connected (after event.EnsureStreams, say).
func CheckMaxPayload(nc *nats.Conn) (int64, error) {
	mp := nc.MaxPayload()
	if mp == 0 {
		return 0, fmt.Errorf("nats max_payload unknown: not connected to %s", nc.ConnectedUrlRedacted())
	}
	if mp < MinMaxPayload {
		return mp, fmt.Errorf("the NATS server at %s has max_payload %d bytes; Sundial needs at least %d "+
			"(nats-server's default, 1MB): raise max_payload in the nats-server configuration "+
			"(and at least SUNDIAL_MAX_DATA_BYTES + %d to accept hooks of up to SUNDIAL_MAX_DATA_BYTES)",
			nc.ConnectedUrlRedacted(), mp, MinMaxPayload, DueEnvelope)
	}
	return mp, nil
}

// DueBatchBytes bounds the encoded hooks of one DueHooks message; a hook
// larger than that goes in a message of its own. With DueEnvelope, a due
// message is then at most max(DueBatchBytes, one hook) + DueEnvelope,
// within MinMaxPayload and any max_payload the gateway's limit followed.
// It also bounds what a dispatcher pulling many messages at once holds.
const DueBatchBytes = 256 << 10

// DueBatch gathers due hooks, in order, into DueHooks messages of at most
// Max hooks and DueBatchBytes of encoded hooks (or one larger hook alone).
// The zero value with Max set is ready to use.
type DueBatch struct {
	// Max bounds the hooks of one message; 0 or less: no bound but bytes.
	Max   int
	hooks []*eventv1.DueHook
	bytes int
}

// Fits reports whether due may join the batch: an empty batch takes any
// hook, a batch holding some takes one more while the encoded hooks stay
// within DueBatchBytes.
func (b *DueBatch) Fits(due *eventv1.DueHook) bool {
	return len(b.hooks) == 0 || b.bytes+dueSize(due) <= DueBatchBytes
}

// Add puts due in the batch and reports whether the batch is now full
// (Max hooks). Call Fits first, and Take when it says no.
func (b *DueBatch) Add(due *eventv1.DueHook) bool {
	b.hooks = append(b.hooks, due)
	b.bytes += dueSize(due)
	return b.Max > 0 && len(b.hooks) >= b.Max
}

// Len is how many hooks the batch holds.
func (b *DueBatch) Len() int { return len(b.hooks) }

// Take returns the batch's message and empties the batch.
func (b *DueBatch) Take() Message {
	hooks := b.hooks
	b.hooks, b.bytes = nil, 0
	return DueHooks(hooks)
}

// SplitDue returns hooks, in order, as DueHooks messages by DueBatch's
// rule, each of at most max hooks (0 or less: no bound but bytes).
func SplitDue(hooks []*eventv1.DueHook, max int) []Message {
	var msgs []Message
	b := DueBatch{Max: max}
	for _, h := range hooks {
		if !b.Fits(h) {
			msgs = append(msgs, b.Take())
		}
		if b.Add(h) {
			msgs = append(msgs, b.Take())
		}
	}
	if b.Len() > 0 {
		msgs = append(msgs, b.Take())
	}
	return msgs
}

// dueSize is what due adds to an encoded DueHooks message: the hook, its
// length and its field tag.
func dueSize(due *eventv1.DueHook) int {
	n := proto.Size(due)
	return protowire.SizeTag(1) + protowire.SizeVarint(uint64(n)) + n
}
