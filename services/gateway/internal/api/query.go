package api

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// checkQuery refuses a query string that does not parse, on every route
// of the API.
// echo's QueryParams (and the generated parameter binding on it) ignores
// url.ParseQuery's error and keeps whatever parsed, which on a query of
// more than 10,000 parameters is nothing and on one with a ';' is every
// parameter but that one: a filter silently dropped, e.g. status=failed
// listing pending hooks. A request whose filters cannot all be read is
// refused instead, with a 400 naming the query.
func checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, err := url.ParseQuery(c.Request().URL.RawQuery); err != nil {
			return invalid(Detail{Field: "query", Message: "does not parse (" + err.Error() + "): separate parameters with " +
				"'&' (not ';'), percent-encode reserved characters, and send at most 10,000 parameters"})
		}
		return next(c)
	}
}
