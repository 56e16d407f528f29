package event

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Alert kinds as the alerts table names them (migrations/00009) and as the
// alert ids begin (docs/notifications.md).
const (
	AlertKindHookFailed        = "hook.failed"
	AlertKindEndpointRecovered = "endpoint.recovered"
	AlertKindEndpointPaused    = "endpoint.paused"
)

// HookFailedAlertID is the alert_id of a hook's hook.failed alert. The lease
// of the final attempt identifies the occurrence: publishing it again is
// deduplicated, while the same hook failing again after a bulk retry (a new
// lease) is a new alert.
func HookFailedAlertID(hookID uuid.UUID, leaseSeq int64) string {
	return AlertKindHookFailed + ":" + hookID.String() + ":" + strconv.FormatInt(leaseSeq, 10)
}

// EndpointRecoveredAlertID is the alert_id of the endpoint.recovered alert
// that ends an endpoint's failing spell: the spell is identified by when it
// began, so the same recovery written twice (by the scheduler applying a
// result, or by the gateway applying an async ack) is one alert, and the
// next spell of the same endpoint is another.
func EndpointRecoveredAlertID(projectID uuid.UUID, domain, path string, failingSince time.Time) string {
	sum := sha256.Sum256([]byte(domain + " " + path))
	return AlertKindEndpointRecovered + ":" + projectID.String() + ":" +
		strconv.FormatInt(failingSince.UnixNano(), 10) + ":" + hex.EncodeToString(sum[:])[:16]
}

// EndpointPausedAlertID is the alert_id of the endpoint.paused alert of one
// pause of a unit (a project's domain): the pause is identified by when it
// began, so writing it again is one alert, and the next pause is another.
func EndpointPausedAlertID(projectID uuid.UUID, domain string, pausedAt time.Time) string {
	sum := sha256.Sum256([]byte(domain))
	return AlertKindEndpointPaused + ":" + projectID.String() + ":" +
		strconv.FormatInt(pausedAt.UnixNano(), 10) + ":" + hex.EncodeToString(sum[:])[:16]
}
