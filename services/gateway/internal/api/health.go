package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

type status struct {
	Status string `json:"status"`
}

// healthz says the process is up and serving; it checks nothing else, so
// that a database outage does not get every replica restarted.
func (s *server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, status{Status: "ok"})
}

// readyz says the gateway takes requests. It checks no dependency: the
// gateway answers for them itself, a request that needs PostgreSQL or NATS
// while it is down getting 503 with Retry-After. Were readiness to follow
// them, an outage would mark every replica not ready, the Service would
// have no endpoints, and clients would get connection errors instead.
func (s *server) readyz(c echo.Context) error {
	return c.JSON(http.StatusOK, status{Status: "ready"})
}
