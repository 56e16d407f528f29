// Package exhaustion attacks the gateway as a hostile or unlucky client
// would, with the gateway running as a real process (built once per run
// without the race detector) so that its memory and file descriptors are
// measured from /proc: list pages of 1 MiB hooks requested at once, and
// tens of thousands of idle keep-alive sockets held by one client.
//
// The gateway's other defences against clients (a query string that does
// not parse is 400, failed authentication throttled per address, 503 while
// PostgreSQL is unreachable) are tested in services/gateway/app, where the
// gateway runs in-process.
package exhaustion
