package hook

import (
	"encoding/json"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// View is a hook as the API shows it. The first ten fields are always
// present; the others only when set.
type View struct {
	ID                  string          `json:"id"`
	Path                string          `json:"path"`
	Domain              string          `json:"domain"`
	Data                json.RawMessage `json:"data"`
	PostAt              string          `json:"postAt"`
	Status              string          `json:"status"`
	Attempts            int32           `json:"attempts"`
	PostDurationSeconds float64         `json:"postDurationSeconds"`
	CreatedAt           string          `json:"createdAt"`
	UpdatedAt           string          `json:"updatedAt"`
	FailureError        *string         `json:"failureError,omitempty"`
	TryAt               *string         `json:"tryAt,omitempty"`
	RetryOverride       json.RawMessage `json:"retryOverride,omitempty"`
	SequenceData        *SequenceData   `json:"sequenceData,omitempty"`
	WasNotified         bool            `json:"wasNotified,omitempty"`
}

// SequenceData ties a hook to the sequence run that created it.
type SequenceData struct {
	SequenceID        string  `json:"sequenceID"`
	StepName          string  `json:"stepName"`
	SequenceLastRunAt *string `json:"sequenceLastRunAt,omitempty"`
}

// ToView shows a stored hook.
func ToView(h store.Hook) View {
	v := View{
		ID:                  h.ID.String(),
		Path:                h.Path,
		Domain:              h.Domain,
		Data:                h.Data,
		PostAt:              timestamp(h.PostAt),
		Status:              h.Status,
		Attempts:            h.Attempts,
		PostDurationSeconds: h.PostDurationSeconds,
		CreatedAt:           timestamp(h.CreatedAt),
		UpdatedAt:           timestamp(h.UpdatedAt),
		FailureError:        h.FailureError,
		TryAt:               optionalTimestamp(h.TryAt),
		RetryOverride:       h.RetryOverride,
		WasNotified:         h.WasNotified,
	}
	if h.SequenceID != nil {
		v.SequenceData = &SequenceData{
			SequenceID:        h.SequenceID.String(),
			SequenceLastRunAt: optionalTimestamp(h.SequenceLastRunAt),
		}
		if h.SequenceStep != nil {
			v.SequenceData.StepName = *h.SequenceStep
		}
	}
	return v
}

// timestamp shows a time in UTC with the precision stored (microseconds at
// most, trailing zeros dropped).
func timestamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

func optionalTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timestamp(*t)
	return &s
}
