// Package postgres tests pkg/postgres's migrations and pool against a real
// PostgreSQL server (pgtest). The tests live here, outside the pkg module,
// because the test kit's pgtest is built on pkg/postgres: pkg's own tests
// using it would make the two modules require each other.
package postgres
