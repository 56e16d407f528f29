package event

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Usage threshold alerts (docs/notifications.md): every producer that counts
// hooks against a project's quota (the gateway's creates and replays, the
// scheduler's sequence steps) claims, in the counting transaction, the
// thresholds its count reaches first in the period, by these rules.

// AlertKindQuotaThreshold is the kind of a usage threshold alert in the
// alerts table.
const AlertKindQuotaThreshold = "quota.threshold"

// QuotaThresholds are the usage levels, in percent of the quota, announced
// once per billing period each.
var QuotaThresholds = []int32{75, 100, 150}

// QuotaCrossing is a usage threshold a project reached, claimed for its
// alert.
type QuotaCrossing struct {
	ProjectID   uuid.UUID
	Percent     int32
	Used        int64 // the usage that reached the threshold
	Quota       int64
	PeriodStart time.Time
	At          time.Time // the database clock when it was reached
}

// AlertID identifies the alert of one threshold in one period of one
// project: publishing or writing it again is the same alert, whoever does.
func (c QuotaCrossing) AlertID() string {
	return "quota:" + c.ProjectID.String() + ":" + c.PeriodStart.UTC().Format(time.RFC3339) + ":" +
		strconv.Itoa(int(c.Percent))
}

// MsgID is the alert's Nats-Msg-Id, so that JetStream also stores a
// repeated publish once.
func (c QuotaCrossing) MsgID() string {
	return MsgID(KindAlert, c.AlertID(), 0)
}

// Alert is the event the notifier turns into a usage e-mail.
func (c QuotaCrossing) Alert() *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:          c.AlertID(),
		Kind:             eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD,
		ProjectId:        c.ProjectID.String(),
		OccurredAt:       timestamppb.New(c.At),
		ThresholdPercent: c.Percent,
		Usage:            c.Used,
		Quota:            c.Quota,
		PeriodStart:      timestamppb.New(c.PeriodStart),
	}
}

// QuotaThresholdUsage is the usage at which percent of quota is reached:
// the smallest count with count × 100 >= quota × percent, without
// overflowing.
func QuotaThresholdUsage(quota int64, percent int32) int64 {
	p := int64(percent)
	whole, part := quota/100, quota%100
	if whole > (math.MaxInt64-100)/p {
		return math.MaxInt64
	}
	return whole*p + (part*p+99)/100
}

// QuotaCrossings lists the thresholds that used hooks of quota reach and
// claimed (the thresholds already claimed in the period) does not hold.
// Every one of them is new, even several at once (a bulk replay, a burst of
// sequence steps, or a plan lowered in the middle of the period): each is
// announced once.
func QuotaCrossings(projectID uuid.UUID, quota, used int64, periodStart, at time.Time, claimed []int32) []QuotaCrossing {
	var out []QuotaCrossing
	for _, pct := range QuotaThresholds {
		if used < QuotaThresholdUsage(quota, pct) || slices.Contains(claimed, pct) {
			continue
		}
		out = append(out, QuotaCrossing{
			ProjectID: projectID, Percent: pct, Used: used, Quota: quota, PeriodStart: periodStart, At: at,
		})
	}
	return out
}
