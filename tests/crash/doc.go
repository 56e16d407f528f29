// Package crash kills Sundial's services as real processes in the middle of
// their work, and takes NATS and PostgreSQL away under them or restores
// the database from its backup into a new server, and checks that no hook
// is lost and that duplicates stay within what at-least-once delivery
// allows.
//
// Schedulers and dispatchers (and, for the load test, the gateway) run as
// processes built once per run without the race detector and killed with
// SIGKILL; the notifier (and otherwise the gateway) runs in-process on a
// fresh pgtest database and natstest server. Every test ends with the
// checker (tests/internal/checker) comparing the hooks the API accepted
// with what the receiver saw: none lost, none unknown, none early, and no
// more duplicates than the bound the test states and explains. A test
// with more duplicates than its bound logs, before it fails, each extra
// arrival of a few of them, the attempts their hooks recorded and the
// processes' log lines naming them (the load test runs its schedulers and
// dispatchers at info level, so a delivery's line with its attempt and
// lease is among them): whether a retry, a re-drive or a message handed
// out twice sent it again shows in the failure itself.
//
// The suite uses a 15 s lease (30 s in production): lost work is re-driven
// within the test, while queueing, a delivery and its result still fit in
// a lease on a loaded 2-core machine.
package crash
