// Package sdk checks the Go SDK (module sdk) against the service itself:
// its signature checks against the service's own signer (pkg/signing), its
// client against a gateway booted in-process on a real PostgreSQL and NATS
// (and its receiver against real deliveries from the dispatcher), and its
// coverage of the OpenAPI document's operations.
package sdk
