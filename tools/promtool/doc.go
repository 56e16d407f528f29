// Package promtool pins Prometheus's promtool, which make check-alerts
// runs (go tool promtool) to check and unit-test the shipped alert rules
// and the dashboard's queries. A module of its own: Prometheus's
// dependencies stay out of the generators' module.
package promtool
