// Package event is the contract between Sundial's services on NATS
// JetStream: the streams, their subjects, the durable consumers that read
// them, and the one function that derives every message's Nats-Msg-Id.
//
// The messages themselves are the protobuf types of package eventv1.
package event

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Subjects. The version in the subject lets a v2 schema live beside v1.
const (
	SubjectDue    = "sundial.v1.hook.due"
	SubjectResult = "sundial.v1.hook.result"
	SubjectAlert  = "sundial.v1.alert"
)

// Streams.
const (
	StreamDue     = "SUNDIAL_DUE"
	StreamResults = "SUNDIAL_RESULTS"
	StreamAlerts  = "SUNDIAL_ALERTS"
)

// Durable consumer names: one per reading service, shared by its replicas.
const (
	ConsumerDispatcher = "dispatcher"
	ConsumerScheduler  = "scheduler"
	ConsumerNotifier   = "notifier"
)

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id. A publish
// repeated within it (a retried claim batch, a result published twice) is
// stored once.
const DuplicateWindow = 2 * time.Minute

// Stream replicas (SUNDIAL_STREAM_REPLICAS): how many servers of a
// JetStream cluster keep each stream and each durable consumer. A work
// queue's consumers must have as many replicas as their stream (JetStream
// refuses anything else), so one number sets both. Every service reads it
// and must be given the same value: the last to start would otherwise
// rescale the streams to its own.
const (
	ReplicasEnv     = "SUNDIAL_STREAM_REPLICAS"
	DefaultReplicas = 1
	// MaxReplicas is JetStream's own limit.
	MaxReplicas = 5
)

// CheckReplicas returns an error naming SUNDIAL_STREAM_REPLICAS when n is
// out of range; the services' Validate methods report it.
func CheckReplicas(n int) error {
	if n < 1 || n > MaxReplicas {
		return fmt.Errorf("%s=%d: want 1 to %d (odd: 1, 3 or 5, so that a majority survives a server's loss)",
			ReplicasEnv, n, MaxReplicas)
	}
	return nil
}

// Streams returns the configuration of every stream with the given
// replicas. All are work queues: a message is removed once its one
// consumer acknowledges it. PostgreSQL is the system of record, so a
// stream that loses its data loses no hook: the scheduler's lease expiry
// re-drives it.
func Streams(replicas int) []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		workQueue(StreamDue, SubjectDue, time.Hour, replicas, "due hooks, from the scheduler to the dispatchers"),
		workQueue(StreamResults, SubjectResult, 24*time.Hour, replicas, "attempt results, from the dispatchers to the scheduler"),
		workQueue(StreamAlerts, SubjectAlert, 7*24*time.Hour, replicas, "alerts, from the scheduler and the gateway to the notifier"),
	}
}

func workQueue(name, subject string, maxAge time.Duration, replicas int, description string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        name,
		Description: description,
		Subjects:    []string{subject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      maxAge,
		Duplicates:  DuplicateWindow,
		Discard:     jetstream.DiscardOld,
		Replicas:    replicas,
	}
}

// Consumer is a durable consumer and the stream it reads.
type Consumer struct {
	Stream string
	Config jetstream.ConsumerConfig
}

// MaxAckPending of the durable consumers. It bounds what ALL the
// consumer's replicas together hold unacknowledged, so it must not be one
// process's concurrency: N replicas would then share one process's worth,
// and the messages a killed replica held (unacknowledged until AckWait)
// would stall every survivor until then. Each process bounds its own work
// by its pull size and handler slots (bus.ConsumeOptions.Concurrency); these
// bounds only stop an unbounded pile-up on the server. What waits in the
// due and results queues is bounded upstream by the schedulers'
// backpressure (SUNDIAL_SCHEDULER_MAX_IN_FLIGHT, default 10,000), and what
// the dispatchers hold by their handlers, both kept below them.
const (
	MaxAckPendingDue     = 50000
	MaxAckPendingResults = 50000
	MaxAckPendingAlerts  = 5000
)

// DueAckWait is the dispatcher consumer's AckWait. A dispatcher keeps the
// messages it works on in progress every quarter of it (bus.Consume), so it
// bounds nothing a live dispatcher does; it is how long the hooks fetched
// by a dispatcher that died wait before another dispatcher takes them.
// Short enough that they arrive within seconds of the death; long enough
// that a live dispatcher stalled for a moment (a GC pause, a busy machine)
// keeps its messages.
const DueAckWait = 3 * time.Second

// DispatcherConsumer reads due hooks. Redeliveries are unlimited because
// they are bounded anyway: a dispatcher acknowledges without delivering any
// message whose lease is (nearly) over, so a message handed back (its host
// busy, a database hiccup) lives at most one lease.
func DispatcherConsumer(replicas int) Consumer {
	return Consumer{Stream: StreamDue, Config: jetstream.ConsumerConfig{
		Durable:       ConsumerDispatcher,
		FilterSubject: SubjectDue,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       DueAckWait,
		MaxDeliver:    -1,
		MaxAckPending: MaxAckPendingDue,
		Replicas:      replicas,
	}}
}

// ResultsAckWait is the scheduler consumer's AckWait. A scheduler keeps the
// results it applies in progress every quarter of it (bus.Consume); it is
// how long a result waits when its scheduler died, or when the server sent
// it to a pull that had just expired, before a scheduler applies it. It
// must be well inside a hook's lease (30 s by default): a result applied
// after its lease finds the hook re-driven, and delivered twice.
const ResultsAckWait = 5 * time.Second

// SchedulerConsumer reads attempt results.
func SchedulerConsumer(replicas int) Consumer {
	return Consumer{Stream: StreamResults, Config: jetstream.ConsumerConfig{
		Durable:       ConsumerScheduler,
		FilterSubject: SubjectResult,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ResultsAckWait,
		MaxDeliver:    -1,
		MaxAckPending: MaxAckPendingResults,
		Replicas:      replicas,
	}}
}

// NotifierConsumer reads alerts. Alerts are retried without limit: a channel
// that keeps failing is reported, never silently dropped.
func NotifierConsumer(replicas int) Consumer {
	return Consumer{Stream: StreamAlerts, Config: jetstream.ConsumerConfig{
		Durable:       ConsumerNotifier,
		FilterSubject: SubjectAlert,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       time.Minute,
		MaxDeliver:    -1,
		MaxAckPending: MaxAckPendingAlerts,
		Replicas:      replicas,
	}}
}

// IsStreamGone reports whether err says that a stream or consumer no longer
// exists (or a publish found no stream to take it).
func IsStreamGone(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrNoStreamResponse)
}

// KindAlert is the first part of an alert's Nats-Msg-Id (MsgID).
const KindAlert = "alert"

// MsgID derives the Nats-Msg-Id of an event about one thing: its kind, the
// id of what it is about, and the sequence that tells one occurrence from
// the next. Every publisher of alerts uses it, so the same alert published
// twice is stored once. Due hooks and results travel in batches, whose ids
// DuesMsgID and ResultsMsgID derive.
func MsgID(kind, id string, seq int64) string {
	return kind + ":" + id + ":" + strconv.FormatInt(seq, 10)
}

// TypeHeader names the message type of an event (Sundial-Type). The due
// and results subjects carry one type each, always a batch: TypeDueHooks
// and TypeAttemptResults. A consumer refuses a message whose header is
// missing or names another type (DecodeDue, DecodeResults): it cannot be
// read, so bus.Consume terminates it (bus.Drop), and the lease of each hook
// it carried re-drives the hook.
const TypeHeader = "Sundial-Type"

// Message types in TypeHeader: the protobuf full names.
const (
	TypeDueHooks       = "sundial.event.v1.DueHooks"
	TypeAttemptResults = "sundial.event.v1.AttemptResults"
)

// First parts of the Nats-Msg-Id of a batch of due hooks and of results.
const (
	KindDues    = "dues"
	KindResults = "results"
)

// DuesMsgID derives the Nats-Msg-Id of a batch of due hooks from the hooks
// it carries, in order: (hook id, lease sequence) of each. A claim's batch
// published again is stored once; a lease's hook is never in two batches,
// because each claim raises the lease sequence.
func DuesMsgID(hookIDs []string, leaseSeqs []int64) string {
	return batchMsgID(KindDues, hookIDs, leaseSeqs)
}

// ResultsMsgID derives the Nats-Msg-Id of a batch of attempt results from
// the results it carries, in order: (hook id, lease sequence) of each. The
// same batch published again (a retried publish) is stored once. A result
// that does come again in another batch (its DueHook redelivered after the
// batch was published) changes nothing: the scheduler applies a lease's
// result once.
func ResultsMsgID(hookIDs []string, leaseSeqs []int64) string {
	return batchMsgID(KindResults, hookIDs, leaseSeqs)
}

// batchMsgID is kind, a digest of the (hook id, lease sequence) pairs, and
// their count.
func batchMsgID(kind string, hookIDs []string, leaseSeqs []int64) string {
	h := sha256.New()
	var buf [8]byte
	for i, id := range hookIDs {
		h.Write([]byte(id))
		binary.BigEndian.PutUint64(buf[:], uint64(leaseSeqs[i]))
		h.Write(buf[:])
	}
	sum := h.Sum(nil)
	return kind + ":" + hex.EncodeToString(sum[:16]) + ":" + strconv.Itoa(len(hookIDs))
}
