package dispatch

import (
	"errors"
	"time"

	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// connectWait is how long a hook not sent because its host's new
// connections were spent (delivery.ErrConnectionRate) is deferred: about
// the time the host's bucket takes to give a few connections again at the
// default rate (docs/security.md, "One response, one delivery").
const connectWait = time.Second

// connectionsSpent reports whether err says the delivery was not sent
// because its host used up its new connections for now: then nothing
// reached the receiver, and the hook is deferred, not an attempt.
func connectionsSpent(err error) bool {
	return errors.Is(err, delivery.ErrConnectionRate)
}
