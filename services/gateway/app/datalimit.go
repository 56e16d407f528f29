package app

import (
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/sundial-run/sundial/pkg/bus"
)

// dataLimit is the largest hook data the gateway accepts: SUNDIAL_MAX_DATA_BYTES,
// lowered to what the NATS server's max_payload carries in a due message
// (bus.MaxHookData), so that no hook is accepted that could never be sent
// (docs/security.md, "Sizes agree end to end"). It fails when the server's
// max_payload is under bus.MinMaxPayload, and logs the limit it takes, with
// what to change when it is lower than configured.
func dataLimit(cfg Config, nc *nats.Conn, log *slog.Logger) (int, error) {
	mp, err := bus.CheckMaxPayload(nc)
	if err != nil {
		return 0, err
	}
	limit := int(min(int64(cfg.MaxDataBytes), bus.MaxHookData(mp)))
	if limit < cfg.MaxDataBytes {
		log.Warn("hook data limit lowered to what NATS max_payload carries: larger data is refused with 413; "+
			"to accept SUNDIAL_MAX_DATA_BYTES, raise nats-server's max_payload to nats_max_payload_needed, "+
			"or set SUNDIAL_MAX_DATA_BYTES to max_data_bytes to silence this",
			"max_data_bytes", limit, "configured", cfg.MaxDataBytes, "nats_max_payload", mp,
			"nats_max_payload_needed", int64(cfg.MaxDataBytes)+bus.DueEnvelope)
	} else {
		log.Info("hook data limit", "max_data_bytes", limit, "nats_max_payload", mp)
	}
	return limit, nil
}
