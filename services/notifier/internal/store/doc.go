// Package store is the notifier's access to PostgreSQL: the queries in the
// .sql files beside this one, compiled by sqlc (make generate-sqlc) into
// the *.sql.go files. Queries named ...ForTest serve package notifiertest.
package store
