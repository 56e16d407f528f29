package quota

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// AlertKind is the kind of a usage threshold alert in the alerts table.
const AlertKind = "quota.threshold"

// Thresholds are the usage levels, in percent of the quota, announced once
// per billing period each.
var Thresholds = []int32{75, 100, 150}

// Crossing is a usage threshold a project reached, claimed for its alert.
type Crossing struct {
	ProjectID   uuid.UUID
	Percent     int32
	Used        int64 // the usage that reached the threshold
	Quota       int64
	PeriodStart time.Time
	At          time.Time // the database clock when it was reached
}

// AlertID identifies the alert of one threshold in one period of one
// project: publishing it again is the same alert.
func (c Crossing) AlertID() string {
	return "quota:" + c.ProjectID.String() + ":" + c.PeriodStart.UTC().Format(time.RFC3339) + ":" +
		strconv.Itoa(int(c.Percent))
}

// MsgID is the alert's Nats-Msg-Id, so that JetStream also stores a
// repeated publish once.
func (c Crossing) MsgID() string {
	return event.MsgID(event.KindAlert, c.AlertID(), 0)
}

// Alert is the event the notifier turns into a usage e-mail.
func (c Crossing) Alert() *eventv1.Alert {
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

// ThresholdUsage is the usage at which percent of quota is reached: the
// smallest count with count × 100 >= quota × percent, without overflowing.
func ThresholdUsage(quota int64, percent int32) int64 {
	p := int64(percent)
	whole, part := quota/100, quota%100
	if whole > (math.MaxInt64-100)/p {
		return math.MaxInt64
	}
	return whole*p + (part*p+99)/100
}

// reached lists the thresholds u has reached that claimed does not hold
// yet. Every one of them is new, even several at once (a bulk replay, or a
// plan lowered in the middle of the period): each is announced once.
func reached(projectID uuid.UUID, u Usage, claimed []int32) []Crossing {
	var out []Crossing
	for _, pct := range Thresholds {
		if u.Used < ThresholdUsage(u.Limit, pct) || slices.Contains(claimed, pct) {
			continue
		}
		out = append(out, Crossing{
			ProjectID: projectID, Percent: pct, Used: u.Used, Quota: u.Limit,
			PeriodStart: u.PeriodStart, At: u.Now,
		})
	}
	return out
}
