// Package apibench measures the gateway's REST API under load, on this
// machine, against a real PostgreSQL: a closed-loop load generator (each
// client sends its next request as soon as the previous one is answered),
// latency percentiles, and the report that `make bench` prints and writes
// to .bench/api.json.
//
// BenchmarkAPI (apibench_test.go) boots the gateway in-process on a fresh
// database, drives POST /v1/hooks with 64 clients for 10 seconds, then
// times GET /v1/hooks on a project holding a million hooks beside another
// project of a million. Environment variables change the defaults:
// SUNDIAL_BENCH_DURATION (e.g. 30s), SUNDIAL_BENCH_CLIENTS,
// SUNDIAL_BENCH_LIST_HOOKS (hooks per project for the list timings) and
// SUNDIAL_BENCH_OUT (the JSON file).
package apibench
