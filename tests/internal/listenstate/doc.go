// Package listenstate reads the listener's state from the database for the
// tests that wait on it: the sockets a project has connected and the hooks
// its resume window holds. Its queries are compiled by sqlc from
// listenstate.sql.
package listenstate
