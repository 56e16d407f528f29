// Package cluster runs Sundial on a three-server NATS JetStream cluster
// with every stream and durable consumer at three replicas
// (SUNDIAL_STREAM_REPLICAS=3), kills NATS servers with SIGKILL in the
// middle of a burst of deliveries, and checks that no hook is lost or
// delivered early, that duplicates come only from deliveries in flight at
// a kill, and how long deliveries take to resume after each kill.
//
// The NATS servers, the gateway, the schedulers and the dispatchers are
// processes (nats-server built from the module the test kit uses, the
// services without the race detector); PostgreSQL is a fresh pgtest
// database; the receiver is tests/internal/recorder.
package cluster
