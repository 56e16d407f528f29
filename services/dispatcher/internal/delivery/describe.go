package delivery

import (
	"errors"
	"time"

	"github.com/sundial-run/sundial/pkg/egress"
)

// wording is the dispatcher's: customers have always read "refused: ..."
// for a refused destination and counted a connection closed without an
// answer among the connection errors.
var wording = egress.Wording{RefusedPrefix: "refused: ", ClosedPrefix: "connection error: "}

// Describe puts a failed exchange in the words customers see in a hook's
// failureError (docs/product.md, "Hooks"): "timeout after 10s",
// "TLS: <reason>", "connection refused", "DNS: no such host <host>",
// "refused: destination <ip> is a loopback address",
// "response headers larger than 64 KiB", else
// "connection error: <short reason>".
func Describe(err error, timeout time.Duration) string {
	if errors.Is(err, errHeadersTooLarge) { // conn.go
		return tooLargeHeaders
	}
	return wording.Describe(err, timeout)
}

// tooLargeHeaders is the failure of an answer whose headers went over
// MaxResponseHeaderBytes.
const tooLargeHeaders = "response headers larger than 64 KiB"
