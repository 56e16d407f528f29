package api

import (
	"context"
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

// readyz says whether the service can do its work: the database answers.
func (s *server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "database unavailable", Cause: err}
	}
	return c.JSON(http.StatusOK, status{Status: "ready"})
}
