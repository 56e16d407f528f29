// Package storetest is the notifier's test-only SQL: fixtures that write rows
// production code never writes this way, read-backs, and VACUUM or ANALYZE
// after bulk loads. sqlc generates it from the .sql files beside this one,
// as it does internal/store. Only tests and benchmarks import it, never
// production code: a test in the service's app package checks that.
package storetest
