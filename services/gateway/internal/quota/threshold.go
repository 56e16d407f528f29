package quota

import (
	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/event"
)

// The usage thresholds and their alerts are a contract the scheduler keeps
// too (it counts sequence step hooks): they live in pkg/event, and these
// are the gateway's names for them.

// AlertKind is the kind of a usage threshold alert in the alerts table.
const AlertKind = event.AlertKindQuotaThreshold

// Thresholds are the usage levels, in percent of the quota, announced once
// per billing period each.
var Thresholds = event.QuotaThresholds

// Crossing is a usage threshold a project reached, claimed for its alert.
type Crossing = event.QuotaCrossing

// ThresholdUsage is the usage at which percent of quota is reached.
func ThresholdUsage(quota int64, percent int32) int64 {
	return event.QuotaThresholdUsage(quota, percent)
}

// reached lists the thresholds u has reached that claimed does not hold
// yet (event.QuotaCrossings).
func reached(projectID uuid.UUID, u Usage, claimed []int32) []Crossing {
	return event.QuotaCrossings(projectID, u.Limit, u.Used, u.PeriodStart, u.Now, claimed)
}
