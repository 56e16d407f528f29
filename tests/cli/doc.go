// Package cli runs the sundial command-line tool (module cmd/sundial)
// in-process against a gateway booted on a real PostgreSQL and NATS: login
// and its config file, and the hooks commands. The tool's own tests
// (cmd/sundial/cli) cover its command line and `listen`, against a
// protocol server, without the service's dependencies.
package cli
