package project

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sundial-run/sundial/pkg/asyncurl"
	"github.com/sundial-run/sundial/pkg/channelconfig"
	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/pkg/signing"
)

// Field is one field of a change: left out (Set false), given as null
// (Null), or given a Value. A change must tell the three apart: JSON merge
// patch semantics leave an absent field alone and clear a null one.
type Field[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Value is a field given v.
func Value[T any](v T) Field[T] { return Field[T]{Set: true, Value: v} }

// Null is a field given as null.
func Null[T any]() Field[T] { return Field[T]{Set: true, Null: true} }

// Ptr is the field's value, or nil when it is absent or null.
func (f Field[T]) Ptr() *T {
	if !f.Set || f.Null {
		return nil
	}
	v := f.Value
	return &v
}

// Patch is a change to a project's settings: only the fields it sets
// change. Only AuthorizationHeader may be null (which clears it).
type Patch struct {
	Name                Field[string]
	Domain              Field[string]
	RetryPolicy         Field[RetryPolicyPatch]
	AsyncTimeoutSecs    Field[int]
	AuthorizationHeader Field[string]
	Alerts              Field[AlertsPatch]
	// SignatureScheme is one of pkg/signing's SignatureSchemes.
	SignatureScheme Field[string]
	// MaxConcurrency caps the project's deliveries in flight to one host
	// from one dispatcher; null clears the cap.
	MaxConcurrency Field[int]
	// RetentionDays is how many days finished hooks are kept, 1 to the
	// plan's bound (checked against the project's row by apply).
	RetentionDays Field[int]
	// FailurePolicy changes the action of the failure classes it names
	// (class to action; retry, the default, for a class given as null);
	// null resets every class.
	FailurePolicy Field[map[string]string]
	// OrderingOnFailure is OrderingContinue or OrderingHold.
	OrderingOnFailure Field[string]
}

// AlertsPatch changes some of the alert settings; the others stay.
type AlertsPatch struct {
	GroupWaitSecs   Field[int]
	FollowUpMinSecs Field[int]
	FollowUpMaxSecs Field[int]
	OwnerEmails     Field[[]string]
}

// RetryPolicyPatch changes some of the default retry settings; the others
// stay.
type RetryPolicyPatch struct {
	MinRetries    Field[int]
	DelaySecs     Field[int]
	Strategy      Field[string]
	BackoffFactor Field[float64]
	MaxDelaySecs  Field[int]
	Jitter        Field[bool]
}

// Bounds of the settings; those of the retry policy are
// retry.ProjectBounds.
const (
	MinAsyncTimeoutSecs = asyncurl.MinTimeoutSecs
	MaxAsyncTimeoutSecs = asyncurl.MaxTimeoutSecs
	MaxAuthorizationLen = 4096
	MaxGroupWaitSecs    = 3600
	MaxFollowUpMinSecs  = 86400
	MaxFollowUpMaxSecs  = 604800
	MaxOwnerEmails      = 20
	// MaxConcurrency's bounds; migration 00011 checks the same.
	MinMaxConcurrency = 1
	MaxMaxConcurrency = 10000
	// RetentionDays' lower bound; the upper is the plan's
	// (Quota.MaxRetentionDays, at most MaxRetentionDays: migration 00022
	// checks both).
	MinRetentionDays = 1
	MaxRetentionDays = 3650

	maxNameLength   = 200
	maxDomainLength = 253
)

// InvalidSettingsError lists every field at fault in a change. It matches
// ErrInvalid with errors.Is.
type InvalidSettingsError struct {
	Problems []*InvalidError
}

func (e *InvalidSettingsError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	return fmt.Sprintf("%d settings are invalid, the first %s", len(e.Problems), e.Problems[0])
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidSettingsError) Is(target error) bool { return target == ErrInvalid }

type problems []*InvalidError

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// addErr records err, which validation returned, under its own field when
// it is an *InvalidError.
func (p *problems) addErr(err error) {
	var ie *InvalidError
	if errors.As(err, &ie) {
		*p = append(*p, ie)
		return
	}
	p.add("", "%s", err)
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidSettingsError{Problems: p}
}

func (p Patch) empty() bool {
	return !p.Name.Set && !p.Domain.Set && !p.RetryPolicy.Set && !p.AsyncTimeoutSecs.Set && !p.AuthorizationHeader.Set &&
		!p.Alerts.Set && !p.SignatureScheme.Set && !p.MaxConcurrency.Set && !p.RetentionDays.Set && !p.FailurePolicy.Set &&
		!p.OrderingOnFailure.Set
}

// check applies the rules of each field on its own, before anything is
// read from the database.
func (p Patch) check() error {
	var bad problems
	notNull(p.Name, "name", &bad)
	if v := p.Name.Ptr(); v != nil {
		checkValue(*v, "name", maxNameLength, ValidateName, &bad)
	}
	notNull(p.Domain, "domain", &bad)
	if v := p.Domain.Ptr(); v != nil {
		checkValue(*v, "domain", maxDomainLength, ValidateDomain, &bad)
	}
	notNull(p.RetryPolicy, "retryPolicy", &bad)
	if v := p.RetryPolicy.Ptr(); v != nil {
		v.check(&bad)
	}
	notNull(p.AsyncTimeoutSecs, "asyncTimeoutSecs", &bad)
	inRange(p.AsyncTimeoutSecs, "asyncTimeoutSecs", MinAsyncTimeoutSecs, MaxAsyncTimeoutSecs, &bad)
	if v := p.AuthorizationHeader.Ptr(); v != nil {
		checkAuthorization(*v, &bad)
	}
	inRange(p.MaxConcurrency, "maxConcurrency", MinMaxConcurrency, MaxMaxConcurrency, &bad)
	notNull(p.RetentionDays, "retentionDays", &bad)
	inRange(p.RetentionDays, "retentionDays", MinRetentionDays, MaxRetentionDays, &bad)
	notNull(p.Alerts, "alerts", &bad)
	if v := p.Alerts.Ptr(); v != nil {
		v.check(&bad)
	}
	notNull(p.SignatureScheme, "signatureScheme", &bad)
	accepted(p.SignatureScheme, "signatureScheme", checkSignatureScheme, &bad)
	if v := p.FailurePolicy.Ptr(); v != nil {
		checkFailurePolicy(*v, &bad)
	}
	notNull(p.OrderingOnFailure, "orderingOnFailure", &bad)
	accepted(p.OrderingOnFailure, "orderingOnFailure", checkOrderingOnFailure, &bad)
	return bad.err()
}

// What an ordering key does when its head hook fails for good (migration
// 00036 checks the column takes these words only):
// OrderingContinue moves on to the key's next hook, OrderingHold keeps the
// key waiting until it is resumed (POST /v1/ordering-keys/{key}/resume).
const (
	OrderingContinue = "continue"
	OrderingHold     = "hold"
)

// OrderingOnFailures are the words of orderingOnFailure, the default first.
var OrderingOnFailures = []string{OrderingContinue, OrderingHold}

// checkOrderingOnFailure accepts OrderingContinue and OrderingHold, and
// nothing else (not another case, not surrounding spaces).
func checkOrderingOnFailure(v string) error {
	if !slices.Contains(OrderingOnFailures, v) {
		return fmt.Errorf("must be %q or %q", OrderingContinue, OrderingHold)
	}
	return nil
}

// checkFailurePolicy accepts, for each class it names, an action the class
// may take (failclass.Check). Each problem names its class's field,
// failurePolicy.<class>.
func checkFailurePolicy(set map[string]string, bad *problems) {
	for _, class := range slices.Sorted(maps.Keys(set)) {
		if err := failclass.Check(class, set[class]); err != nil {
			bad.add("failurePolicy."+class, "%s", err)
		}
	}
}

func (a AlertsPatch) check(bad *problems) {
	const prefix = "alerts."
	notNull(a.GroupWaitSecs, prefix+"groupWaitSecs", bad)
	inRange(a.GroupWaitSecs, prefix+"groupWaitSecs", 0, MaxGroupWaitSecs, bad)
	notNull(a.FollowUpMinSecs, prefix+"followUpMinSecs", bad)
	inRange(a.FollowUpMinSecs, prefix+"followUpMinSecs", 0, MaxFollowUpMinSecs, bad)
	notNull(a.FollowUpMaxSecs, prefix+"followUpMaxSecs", bad)
	inRange(a.FollowUpMaxSecs, prefix+"followUpMaxSecs", 0, MaxFollowUpMaxSecs, bad)
	notNull(a.OwnerEmails, prefix+"ownerEmails", bad)
	if v := a.OwnerEmails.Ptr(); v != nil {
		checkOwnerEmails(*v, bad)
	}
}

// checkOwnerEmails accepts 0 to 20 distinct bare addresses (compared
// without regard to case: the same mailbox twice would get each e-mail
// twice).
func checkOwnerEmails(addrs []string, bad *problems) {
	const field = "alerts.ownerEmails"
	if len(addrs) > MaxOwnerEmails {
		bad.add(field, "at most %d addresses", MaxOwnerEmails)
		return
	}
	seen := make(map[string]bool, len(addrs))
	for i, addr := range addrs {
		name := fmt.Sprintf("%s[%d]", field, i)
		if err := channelconfig.CheckAddress(addr); err != nil {
			bad.add(name, "%v", err)
			continue
		}
		key := strings.ToLower(addr)
		if seen[key] {
			bad.add(name, "%q is listed twice", addr)
		}
		seen[key] = true
	}
}

func (r RetryPolicyPatch) check(bad *problems) {
	const prefix = "retryPolicy."
	b := retry.ProjectBounds
	notNull(r.MinRetries, prefix+"minRetries", bad)
	accepted(r.MinRetries, prefix+"minRetries", b.MinRetries.Check, bad)
	notNull(r.DelaySecs, prefix+"delaySecs", bad)
	accepted(r.DelaySecs, prefix+"delaySecs", b.DelaySecs.Check, bad)
	notNull(r.Strategy, prefix+"strategy", bad)
	accepted(r.Strategy, prefix+"strategy", retry.CheckStrategy, bad)
	notNull(r.BackoffFactor, prefix+"backoffFactor", bad)
	accepted(r.BackoffFactor, prefix+"backoffFactor", b.BackoffFactor.Check, bad)
	notNull(r.MaxDelaySecs, prefix+"maxDelaySecs", bad)
	accepted(r.MaxDelaySecs, prefix+"maxDelaySecs", b.MaxDelaySecs.Check, bad)
	notNull(r.Jitter, prefix+"jitter", bad)
}

// accepted records the error check returns for the field's value, if it is
// given.
func accepted[T any](f Field[T], field string, check func(T) error, bad *problems) {
	if v := f.Ptr(); v != nil {
		if err := check(*v); err != nil {
			bad.add(field, "%s", err)
		}
	}
}

// checkValue checks the length of a value as given, before validate trims
// it, as the API document's maxLength does.
func checkValue(v, field string, maxLen int, validate func(string) (string, error), bad *problems) {
	if utf8.RuneCountInString(v) > maxLen {
		bad.add(field, "at most %d characters", maxLen)
		return
	}
	if _, err := validate(v); err != nil {
		bad.addErr(err)
	}
}

func notNull[T any](f Field[T], field string, bad *problems) {
	if f.Null {
		bad.add(field, "must not be null (leave the field out to keep its value)")
	}
}

func inRange(f Field[int], field string, lo, hi int, bad *problems) {
	if v := f.Ptr(); v != nil && (*v < lo || *v > hi) {
		bad.add(field, "must be from %d to %d", lo, hi)
	}
}

// checkSignatureScheme accepts the words of signing.SignatureSchemes, and
// nothing else (not another case, not surrounding spaces).
func checkSignatureScheme(v string) error {
	_, err := signing.ParseSignatureScheme(v)
	return err
}

// checkAuthorization accepts 1 to 4096 printable ASCII characters (space
// to tilde) without surrounding spaces: what an HTTP field value carries
// unchanged through every proxy. The value is a secret and is never
// repeated in an error.
func checkAuthorization(v string, bad *problems) {
	const field = "authorizationHeader"
	switch {
	case v == "":
		bad.add(field, "must not be empty (null removes the header)")
	case len(v) > MaxAuthorizationLen:
		bad.add(field, "at most %d characters", MaxAuthorizationLen)
	case strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) >= 0:
		bad.add(field, "printable ASCII characters only (no line breaks, tabs or other control characters)")
	case strings.TrimSpace(v) != v:
		bad.add(field, "must not begin or end with spaces")
	}
}

// apply merges p, which check accepted, into cur, and checks the rules
// that relate fields to each other.
func (p Patch) apply(cur Settings) (Settings, error) {
	next := cur
	if v := p.Name.Ptr(); v != nil {
		next.Name, _ = ValidateName(*v)
	}
	if v := p.Domain.Ptr(); v != nil {
		next.Domain, _ = ValidateDomain(*v)
	}
	if v := p.AsyncTimeoutSecs.Ptr(); v != nil {
		next.AsyncTimeoutSecs = *v
	}
	if v := p.SignatureScheme.Ptr(); v != nil {
		next.SignatureScheme = *v
	}
	if v := p.OrderingOnFailure.Ptr(); v != nil {
		next.OrderingOnFailure = *v
	}
	if v := p.AuthorizationHeader.Ptr(); v != nil || p.AuthorizationHeader.Null {
		next.AuthorizationHeaderSet = v != nil
	}
	if p.MaxConcurrency.Set {
		next.MaxConcurrency = p.MaxConcurrency.Ptr()
	}
	if p.FailurePolicy.Null {
		next.FailurePolicy = failclass.Policy{}
	} else if v := p.FailurePolicy.Ptr(); v != nil {
		next.FailurePolicy = cur.FailurePolicy.With(*v)
	}
	if v := p.RetentionDays.Ptr(); v != nil {
		if err := checkRetention(*v, cur.Quota); err != nil {
			return Settings{}, err
		}
		next.RetentionDays = *v
	}
	if v := p.RetryPolicy.Ptr(); v != nil {
		next.RetryPolicy = v.apply(cur.RetryPolicy)
		if err := checkDelays(next.RetryPolicy, *v); err != nil {
			return Settings{}, err
		}
	}
	if v := p.Alerts.Ptr(); v != nil {
		next.Alerts = v.apply(cur.Alerts)
		if err := checkFollowUps(next.Alerts, *v); err != nil {
			return Settings{}, err
		}
	}
	return next, nil
}

func (a AlertsPatch) apply(cur Alerts) Alerts {
	set(&cur.GroupWaitSecs, a.GroupWaitSecs)
	set(&cur.FollowUpMinSecs, a.FollowUpMinSecs)
	set(&cur.FollowUpMaxSecs, a.FollowUpMaxSecs)
	set(&cur.OwnerEmails, a.OwnerEmails)
	return cur
}

// checkFollowUps refuses a follow-up maximum below its minimum (the
// backoff doubles from the one up to the other). The error names the field
// the change gave.
func checkFollowUps(a Alerts, p AlertsPatch) error {
	if a.FollowUpMaxSecs >= a.FollowUpMinSecs {
		return nil
	}
	var bad problems
	if p.FollowUpMaxSecs.Set {
		bad.add("alerts.followUpMaxSecs", "must be at least alerts.followUpMinSecs (%d)", a.FollowUpMinSecs)
	} else {
		bad.add("alerts.followUpMinSecs", "must be at most alerts.followUpMaxSecs (%d)", a.FollowUpMaxSecs)
	}
	return bad.err()
}

func (r RetryPolicyPatch) apply(cur RetryPolicy) RetryPolicy {
	set(&cur.MinRetries, r.MinRetries)
	set(&cur.DelaySecs, r.DelaySecs)
	set(&cur.Strategy, r.Strategy)
	set(&cur.BackoffFactor, r.BackoffFactor)
	set(&cur.MaxDelaySecs, r.MaxDelaySecs)
	set(&cur.Jitter, r.Jitter)
	return cur
}

func set[T any](dst *T, f Field[T]) {
	if v := f.Ptr(); v != nil {
		*dst = *v
	}
}

// checkRetention refuses a retention above the plan's bound, which only
// the operator changes; the project's row holds it, so this is checked as
// the change is merged into that row.
func checkRetention(days int, plan Quota) error {
	if days <= plan.MaxRetentionDays {
		return nil
	}
	var bad problems
	bad.add("retentionDays", "must be from %d to %d, the plan's bound (quota.maxRetentionDays)", MinRetentionDays, plan.MaxRetentionDays)
	return bad.err()
}

// checkDelays refuses a maximum delay below the first delay: every
// exponential delay would then be the maximum, which is surely not what
// was meant. The error names the field the change gave.
func checkDelays(rp RetryPolicy, r RetryPolicyPatch) error {
	if rp.MaxDelaySecs >= rp.DelaySecs {
		return nil
	}
	var bad problems
	if r.MaxDelaySecs.Set {
		bad.add("retryPolicy.maxDelaySecs", "must be at least retryPolicy.delaySecs (%d)", rp.DelaySecs)
	} else {
		bad.add("retryPolicy.delaySecs", "must be at most retryPolicy.maxDelaySecs (%d)", rp.MaxDelaySecs)
	}
	return bad.err()
}
