package claim

// DueHooks messages. One JetStream message per hook costs a publish, a
// stored message, a delivery to the dispatcher and its acknowledgement: in
// a burst that was the largest share of NATS's CPU and a visible one of the
// dispatcher's. So the hooks of one claim go out together, up to
// Config.DueBatch (the service's DefaultDueBatch, 64) in a DueHooks
// message, and a dispatcher delivers them side by side. A batch never
// holds more than bus.DueBatchBytes of encoded hooks (one larger hook goes
// alone), the rule of pkg/bus (bus.DueBatch) that the dispatcher's
// hand-backs follow too: no due message exceeds the NATS server's
// max_payload whatever its hooks' sizes, and a dispatcher pulling many
// messages at once holds a bounded amount of memory.
//
// A hook that goes alone is a DueHooks batch of one, and hooks with a hold
// (hold.go) travel beside hooks without: the due subject carries no other
// form (event.DecodeDue). A batch's Nats-Msg-Id (event.DuesMsgID) is
// derived from its hooks' ids and lease sequences alone, so the same
// claim's batch published again (a retried publish) is stored once, a
// batch of one included, while each claim, raising the lease sequence,
// gets ids of its own.
