// Package listen drives `sundial listen` end to end as a developer does:
// the gateway, scheduler and dispatcher run as processes on a fresh
// database and NATS server, the `sundial` command runs as a process that
// forwards deliveries to a local HTTP server, and the tests check what
// arrived there, what arrived at the project's domain (nothing, while a
// listener is connected or its session is in its resume window), and what
// the API shows of each hook. The faults are real: a gateway killed with
// SIGKILL, the network cut by freezing a TCP proxy between the listener
// and the gateways, a key revoked while it listens.
package listen
