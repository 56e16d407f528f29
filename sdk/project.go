package sundial

import (
	"context"
	"time"
)

// The signature schemes of a project's deliveries.
const (
	// SchemeSundial: Sundial-Id, Sundial-Timestamp, Sundial-Signature and
	// the legacy X-Sundial-Signature (the default).
	SchemeSundial = "sundial"
	// SchemeStandard: webhook-id, webhook-timestamp and webhook-signature
	// (Standard Webhooks 1.0.0) instead.
	SchemeStandard = "standard"
	// SchemeBoth: all of them.
	SchemeBoth = "both"
)

// Project is the project's settings.
type Project struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
	// RetryPolicy is the project's default retry settings.
	RetryPolicy ProjectRetryPolicy `json:"retryPolicy"`
	// AsyncTimeoutSecs is how long a delivery answered 202 waits for its
	// ack or nack, unless the 202 says otherwise.
	AsyncTimeoutSecs       int           `json:"asyncTimeoutSecs"`
	AuthorizationHeaderSet bool          `json:"authorizationHeaderSet"`
	Quota                  ProjectQuota  `json:"quota"`
	Alerts                 AlertSettings `json:"alerts"`
	// MaxConcurrency caps deliveries in flight to one host from one
	// dispatcher; nil: no cap.
	MaxConcurrency  *int   `json:"maxConcurrency"`
	SignatureScheme string `json:"signatureScheme"`
	// RetentionDays is how many days completed and failed hooks are kept
	// after they finished (then deleted with their attempts); at most
	// Quota.MaxRetentionDays.
	RetentionDays int `json:"retentionDays"`
	// FailurePolicy is the action of every failure class (see
	// Hook.FailureClass): "retry" (the default), "fail" or "pause".
	FailurePolicy map[string]string `json:"failurePolicy"`
	// OrderingOnFailure is what an ordering key does when one of its hooks
	// fails for good: OrderingContinue (the default) or OrderingHold.
	OrderingOnFailure string    `json:"orderingOnFailure"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

// ProjectRetryPolicy is a project's default retry settings (the API's
// RetryPolicy schema; RetryPolicy in this package is the client's own).
type ProjectRetryPolicy struct {
	MinRetries    int     `json:"minRetries"`
	DelaySecs     int     `json:"delaySecs"`
	Strategy      string  `json:"strategy"`
	BackoffFactor float64 `json:"backoffFactor"`
	MaxDelaySecs  int     `json:"maxDelaySecs"`
	Jitter        bool    `json:"jitter"`
}

// ProjectQuota is the hooks the plan includes per billing period, and the
// bound of the project's RetentionDays.
type ProjectQuota struct {
	Limit            int64 `json:"limit"`
	HardCapPercent   int   `json:"hardCapPercent"`
	MaxRetentionDays int   `json:"maxRetentionDays"`
}

// AlertSettings is how alerts are grouped and who gets usage e-mails.
type AlertSettings struct {
	GroupWaitSecs   int      `json:"groupWaitSecs"`
	FollowUpMinSecs int      `json:"followUpMinSecs"`
	FollowUpMaxSecs int      `json:"followUpMaxSecs"`
	OwnerEmails     []string `json:"ownerEmails"`
}

// ProjectPatch is a change of settings: nil and zero fields are left as
// they are.
type ProjectPatch struct {
	Name        *string                  `json:"name,omitempty"`
	Domain      *string                  `json:"domain,omitempty"`
	RetryPolicy *ProjectRetryPolicyPatch `json:"retryPolicy,omitempty"`
	// AsyncTimeoutSecs is 1 to 86400.
	AsyncTimeoutSecs *int `json:"asyncTimeoutSecs,omitempty"`
	// AuthorizationHeader is sent as the Authorization header of every
	// delivery; SetNull clears it. Write-only.
	AuthorizationHeader Nullable[string]    `json:"authorizationHeader,omitzero"`
	Alerts              *AlertSettingsPatch `json:"alerts,omitempty"`
	SignatureScheme     *string             `json:"signatureScheme,omitempty"`
	// MaxConcurrency is 1 to 10000; SetNull removes the cap.
	MaxConcurrency Nullable[int] `json:"maxConcurrency,omitzero"`
	// RetentionDays is 1 to the plan's Quota.MaxRetentionDays.
	RetentionDays *int `json:"retentionDays,omitempty"`
	// FailurePolicy changes the action of the failure classes it names:
	// "retry" (the default), "fail" (the hook fails at once) or "pause"
	// (it fails at once and its endpoint pauses until resumed); the
	// classes it leaves out keep theirs.
	FailurePolicy map[string]string `json:"failurePolicy,omitempty"`
	// OrderingOnFailure is OrderingContinue or OrderingHold.
	OrderingOnFailure *string `json:"orderingOnFailure,omitempty"`
}

// ProjectRetryPolicyPatch changes some of the project's retry settings.
type ProjectRetryPolicyPatch struct {
	MinRetries    *int     `json:"minRetries,omitempty"`
	DelaySecs     *int     `json:"delaySecs,omitempty"`
	Strategy      *string  `json:"strategy,omitempty"`
	BackoffFactor *float64 `json:"backoffFactor,omitempty"`
	MaxDelaySecs  *int     `json:"maxDelaySecs,omitempty"`
	Jitter        *bool    `json:"jitter,omitempty"`
}

// AlertSettingsPatch changes some alert settings. OwnerEmails is left out
// when nil; an empty, non-nil slice clears the list.
type AlertSettingsPatch struct {
	GroupWaitSecs   *int     `json:"groupWaitSecs,omitempty"`
	FollowUpMinSecs *int     `json:"followUpMinSecs,omitempty"`
	FollowUpMaxSecs *int     `json:"followUpMaxSecs,omitempty"`
	OwnerEmails     []string `json:"ownerEmails,omitzero"`
}

// ProjectService is the project part of the API.
type ProjectService struct{ c *Client }

// Get returns the project's settings (GET /v1/project).
func (s *ProjectService) Get(ctx context.Context) (Project, error) {
	return get[Project](ctx, s.c, call{method: "GET", path: "/project"})
}

// Update changes the fields set in p (PATCH /v1/project).
func (s *ProjectService) Update(ctx context.Context, p ProjectPatch) (Project, error) {
	return get[Project](ctx, s.c, call{method: "PATCH", path: "/project", body: p})
}
