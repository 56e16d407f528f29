// Package crash kills Sundial's services as real processes in the middle of
// their work, and takes NATS and PostgreSQL away under them, and checks
// that no hook is lost and that duplicates stay within what at-least-once
// delivery allows.
//
// Schedulers and dispatchers (and, for the load test, the gateway) run as
// processes built once per run without the race detector and killed with
// SIGKILL; the notifier (and otherwise the gateway) runs in-process on a
// fresh pgtest database and natstest server. Every test ends with the
// checker (tests/internal/checker) comparing the hooks the API accepted
// with what the receiver saw: none lost, none unknown, none early, and no
// more duplicates than the bound the test states and explains.
//
// The suite uses a 15 s lease (30 s in production): lost work is re-driven
// within the test, while queueing, a delivery and its result still fit in
// a lease on a loaded 2-core machine.
package crash
