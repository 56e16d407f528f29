// Package storetest is sqlc's output for the queries only the scheduler's
// tests and benchmarks use (the ...ForTest and ...ForBulkBench queries):
// fixtures that put projects and hooks in the states other services leave
// them in, and reads of what the scheduler wrote. Production code imports
// package store, never this one.
package storetest
