package project

import (
	"bytes"
	"encoding/json"

	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// PatchRequest is the body of PATCH /v1/project as decoded; Patch turns it
// into the change to make. Pointers cannot tell null from absent, so
// UnmarshalJSON also records which fields were given as null. The
// read-only fields are named so that sending one back (say, after a GET)
// is refused with a message that says why, not as an unknown field.
type PatchRequest struct {
	Name                *string        `json:"name"`
	Domain              *string        `json:"domain"`
	RetryPolicy         *retry.Request `json:"retryPolicy"`
	AsyncTimeoutSecs    *int           `json:"asyncTimeoutSecs"`
	AuthorizationHeader *string        `json:"authorizationHeader"`
	Alerts              *AlertsRequest `json:"alerts"`
	SignatureScheme     *string        `json:"signatureScheme"`
	MaxConcurrency      *int           `json:"maxConcurrency"`
	RetentionDays       *int           `json:"retentionDays"`
	// FailurePolicy maps a class to its action, or to null (the default).
	FailurePolicy     *map[string]*string `json:"failurePolicy"`
	OrderingOnFailure *string             `json:"orderingOnFailure"`

	ID                     json.RawMessage `json:"id"`
	AuthorizationHeaderSet json.RawMessage `json:"authorizationHeaderSet"`
	Quota                  json.RawMessage `json:"quota"`
	CreatedAt              json.RawMessage `json:"createdAt"`
	UpdatedAt              json.RawMessage `json:"updatedAt"`

	// given maps the members of the body, and of its retryPolicy, to
	// whether they were given as null.
	given, retryGiven, alertsGiven map[string]bool
}

// AlertsRequest is the alerts member of a PatchRequest.
type AlertsRequest struct {
	GroupWaitSecs   *int      `json:"groupWaitSecs"`
	FollowUpMinSecs *int      `json:"followUpMinSecs"`
	FollowUpMaxSecs *int      `json:"followUpMaxSecs"`
	OwnerEmails     *[]string `json:"ownerEmails"`
}

// UnmarshalJSON decodes the fields and notes which members were given and
// which of them as null. It expects what strictjson has checked (one
// object, known names), as the API's body binder and DecodePatch provide.
func (r *PatchRequest) UnmarshalJSON(data []byte) error {
	type fields PatchRequest // without this method
	if err := json.Unmarshal(data, (*fields)(r)); err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	r.given = members(top)
	var err error
	if r.retryGiven, err = nestedMembers(top, "retryPolicy"); err != nil {
		return err
	}
	r.alertsGiven, err = nestedMembers(top, "alerts")
	return err
}

// nestedMembers maps the members of the object top[name] (nil when it is
// absent or null) to whether they were given as null.
func nestedMembers(top map[string]json.RawMessage, name string) (map[string]bool, error) {
	raw, ok := top[name]
	if !ok || isNull(raw) {
		return nil, nil
	}
	var nested map[string]json.RawMessage
	if err := json.Unmarshal(raw, &nested); err != nil {
		return nil, err
	}
	return members(nested), nil
}

func members(obj map[string]json.RawMessage) map[string]bool {
	given := make(map[string]bool, len(obj))
	for name, raw := range obj {
		given[name] = isNull(raw)
	}
	return given
}

// DecodePatch reads a settings change strictly (see strictjson: unknown,
// wrong-case and duplicate names, trailing data and invalid UTF-8 are
// *strictjson.Errors), then makes it a Patch.
func DecodePatch(body []byte) (Patch, error) {
	var r PatchRequest
	if err := strictjson.Decode(body, &r); err != nil {
		return Patch{}, err
	}
	return r.Patch()
}

// Patch returns the change the request asks for. A read-only field is an
// *InvalidSettingsError; the values are checked by Service.Update.
func (r *PatchRequest) Patch() (Patch, error) {
	if err := r.readOnly(); err != nil {
		return Patch{}, err
	}
	p := Patch{
		Name:                field(r.given, "name", r.Name),
		Domain:              field(r.given, "domain", r.Domain),
		AsyncTimeoutSecs:    field(r.given, "asyncTimeoutSecs", r.AsyncTimeoutSecs),
		AuthorizationHeader: field(r.given, "authorizationHeader", r.AuthorizationHeader),
		SignatureScheme:     field(r.given, "signatureScheme", r.SignatureScheme),
		MaxConcurrency:      field(r.given, "maxConcurrency", r.MaxConcurrency),
		RetentionDays:       field(r.given, "retentionDays", r.RetentionDays),
		FailurePolicy:       policyField(r.given, r.FailurePolicy),
		OrderingOnFailure:   field(r.given, "orderingOnFailure", r.OrderingOnFailure),
	}
	if null, ok := r.given["retryPolicy"]; ok {
		p.RetryPolicy = Null[RetryPolicyPatch]()
		if rp := r.RetryPolicy; !null && rp != nil {
			g := r.retryGiven
			p.RetryPolicy = Value(RetryPolicyPatch{
				MinRetries:    field(g, "minRetries", rp.MinRetries),
				DelaySecs:     field(g, "delaySecs", rp.DelaySecs),
				Strategy:      field(g, "strategy", rp.Strategy),
				BackoffFactor: field(g, "backoffFactor", rp.BackoffFactor),
				MaxDelaySecs:  field(g, "maxDelaySecs", rp.MaxDelaySecs),
				Jitter:        field(g, "jitter", rp.Jitter),
			})
		}
	}
	if null, ok := r.given["alerts"]; ok {
		p.Alerts = Null[AlertsPatch]()
		if a := r.Alerts; !null && a != nil {
			g := r.alertsGiven
			p.Alerts = Value(AlertsPatch{
				GroupWaitSecs:   field(g, "groupWaitSecs", a.GroupWaitSecs),
				FollowUpMinSecs: field(g, "followUpMinSecs", a.FollowUpMinSecs),
				FollowUpMaxSecs: field(g, "followUpMaxSecs", a.FollowUpMaxSecs),
				OwnerEmails:     field(g, "ownerEmails", a.OwnerEmails),
			})
		}
	}
	return p, nil
}

func (r *PatchRequest) readOnly() error {
	var bad problems
	for _, f := range []struct {
		name, why string
	}{
		{"id", ""},
		{"authorizationHeaderSet", ": set authorizationHeader, or null to remove it"},
		{"quota", ": the plan is changed by the operator"},
		{"createdAt", ""},
		{"updatedAt", ""},
	} {
		if _, ok := r.given[f.name]; ok {
			bad.add(f.name, "is read-only%s", f.why)
		}
	}
	return bad.err()
}

// policyField is the failurePolicy member: absent, null, or its classes
// with their actions (retry, the default, for a class given as null).
func policyField(given map[string]bool, v *map[string]*string) Field[map[string]string] {
	f := field(given, "failurePolicy", v)
	if !f.Set || f.Null {
		return Field[map[string]string]{Set: f.Set, Null: f.Null}
	}
	set := make(map[string]string, len(*v))
	for class, action := range *v {
		set[class] = string(failclass.Retry)
		if action != nil {
			set[class] = *action
		}
	}
	return Value(set)
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// field is the member name of an object: absent, null, or v. given maps
// the object's members to whether they are null.
func field[T any](given map[string]bool, name string, v *T) Field[T] {
	null, ok := given[name]
	switch {
	case !ok:
		return Field[T]{}
	case null || v == nil:
		return Null[T]()
	default:
		return Value(*v)
	}
}
