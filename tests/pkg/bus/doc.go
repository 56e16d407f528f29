// Package bus tests pkg/bus against a real JetStream server (natstest). The
// tests live here, outside the pkg module, so that pkg does not depend on
// the test kit and, through it, on nats-server.
package bus
