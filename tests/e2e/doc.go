// Package e2e boots Sundial's four services in-process against a real
// PostgreSQL and a real NATS JetStream server and follows hooks from the REST
// API to an HTTPS receiver and back into their status.
package e2e
