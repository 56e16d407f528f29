package dispatch

import (
	"errors"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/hostlimit"
)

// notSent maps a delivery that was not sent because its host's new
// connections are spent for now (delivery.ErrConnectionRate) to a hand-back
// after the busy host's delay: nothing reached the receiver, so it is not
// an attempt. Other errors pass unchanged.
func notSent(err error, delivered uint64) error {
	if errors.Is(err, delivery.ErrConnectionRate) {
		return bus.Retry(err, hostlimit.Backoff(delivered))
	}
	return err
}
