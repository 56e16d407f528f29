package channel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sundial-run/sundial/pkg/channelconfig"
)

// Limits of a channel's own fields; the type's settings have theirs in
// channelconfig.
const (
	// MaxPerProject bounds a project's channels: each is a target of every
	// alert, and a list of them is one page.
	MaxPerProject = 100
	MaxNameLength = 200
)

// CreateRequest is the body of POST /v1/channels as decoded (strictly, by
// the API's body binder): url for chat and webhook channels, email for
// e-mail channels.
type CreateRequest struct {
	Name    *string       `json:"name"`
	Type    *string       `json:"type"`
	Events  *[]string     `json:"events"`
	Enabled *bool         `json:"enabled"`
	URL     *string       `json:"url"`
	Email   *EmailRequest `json:"email"`
}

// EmailRequest is the email member of a create or patch request. The
// read-only passwordSet is named so that sending a GET's answer back is
// refused with a message that says why.
type EmailRequest struct {
	Host        *string         `json:"host"`
	Port        *int            `json:"port"`
	Username    *string         `json:"username"`
	Password    *string         `json:"password"`
	TLS         *string         `json:"tls"`
	From        *string         `json:"from"`
	To          *[]string       `json:"to"`
	PasswordSet json.RawMessage `json:"passwordSet"`
}

// PatchRequest is the body of PATCH /v1/channels/{id} as decoded. Fields
// left out keep their value, email's members included: a secret (the
// password, the chat URL) is never shown, so it must survive a change that
// does not mention it. username and password may be null, which clears
// both. The read-only fields are named so that sending one is refused
// with a message that says why, not as an unknown field.
type PatchRequest struct {
	Name    *string       `json:"name"`
	Events  *[]string     `json:"events"`
	Enabled *bool         `json:"enabled"`
	URL     *string       `json:"url"`
	Email   *EmailRequest `json:"email"`

	ID        json.RawMessage `json:"id"`
	Type      json.RawMessage `json:"type"`
	Health    json.RawMessage `json:"health"`
	CreatedAt json.RawMessage `json:"createdAt"`
	UpdatedAt json.RawMessage `json:"updatedAt"`

	// given and emailGiven map the members of the body, and of its email,
	// to whether they were given as null.
	given, emailGiven map[string]bool
}

// UnmarshalJSON decodes the fields and notes which members were given and
// which of them as null. It expects what strictjson has checked.
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
	if raw, ok := top["email"]; ok && !isNull(raw) {
		var nested map[string]json.RawMessage
		if err := json.Unmarshal(raw, &nested); err != nil {
			return err
		}
		r.emailGiven = members(nested)
	}
	return nil
}

func members(obj map[string]json.RawMessage) map[string]bool {
	given := make(map[string]bool, len(obj))
	for name, raw := range obj {
		given[name] = isNull(raw)
	}
	return given
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// problems collects the fields at fault.
type problems []Problem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// addConfig records the *channelconfig.FieldErrors of a config's Validate
// (one, or several joined).
func (p *problems) addConfig(err error) {
	if err == nil {
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			p.addConfig(e)
		}
		return
	}
	if fe, ok := err.(*channelconfig.FieldError); ok {
		p.add(fe.Field, "%s", fe.Message)
		return
	}
	p.add("", "%v", err)
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &InvalidError{Problems: p}
}

// checkName trims a channel's name and checks it: 1 to 200 characters, no
// control characters.
func checkName(name string, bad *problems) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		bad.add("name", "is required")
	case utf8.RuneCountInString(name) > MaxNameLength:
		bad.add("name", "must be at most %d characters", MaxNameLength)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		bad.add("name", "must not contain control characters")
	}
	return name
}

// checkEvents accepts distinct alert kinds of channelconfig.Events.
func checkEvents(events []string, bad *problems) {
	for i, e := range events {
		field := fmt.Sprintf("events[%d]", i)
		switch {
		case !slices.Contains(channelconfig.Events, e):
			bad.add(field, "must be one of %s", strings.Join(channelconfig.Events, ", "))
		case slices.Index(events, e) < i:
			bad.add(field, "%q is listed twice", e)
		}
	}
}

// settings is a channel's name, subscriptions and config as a request
// leaves them, before they are stored.
type settings struct {
	name    string
	kind    string
	events  []string
	enabled bool
	config  any // channelconfig.Chat, Webhook or Email
}

// settings checks a creation and returns what to store, or an
// *InvalidError naming every field at fault.
func (r *CreateRequest) settings() (settings, error) {
	var bad problems
	s := settings{events: slices.Clone(channelconfig.Events), enabled: true}
	if r.Name == nil {
		bad.add("name", "is required")
	} else {
		s.name = checkName(*r.Name, &bad)
	}
	if r.Events != nil {
		s.events = *r.Events
		checkEvents(s.events, &bad)
	}
	if r.Enabled != nil {
		s.enabled = *r.Enabled
	}
	if r.Type == nil {
		bad.add("type", "is required: chat, webhook or email")
		return s, bad.err()
	}
	s.kind = *r.Type
	switch s.kind {
	case channelconfig.KindChat, channelconfig.KindWebhook:
		if r.Email != nil {
			bad.add("email", "is only for email channels")
		}
		url := deref(r.URL)
		if s.kind == channelconfig.KindChat {
			s.config = channelconfig.Chat{URL: url}
		} else {
			s.config = channelconfig.Webhook{URL: url}
		}
	case channelconfig.KindEmail:
		if r.URL != nil {
			bad.add("url", "is only for chat and webhook channels")
		}
		if r.Email == nil {
			bad.add("email", "is required for an email channel")
			return s, bad.err()
		}
		e, ok := r.Email.merge(channelconfig.Email{}, nil, &bad)
		if !ok {
			return s, bad.err()
		}
		s.config = e
	default:
		bad.add("type", "must be chat, webhook or email")
		return s, bad.err()
	}
	bad.addConfig(validate(s.config))
	return s, bad.err()
}

// merge applies the members of r that were given onto cur. given maps
// them to whether they were null (nil: none was null, as in a creation).
// It reports false when a member it cannot merge was given.
func (r *EmailRequest) merge(cur channelconfig.Email, given map[string]bool, bad *problems) (channelconfig.Email, bool) {
	if r.PasswordSet != nil {
		bad.add("email.passwordSet", "is read-only: set email.password")
		return cur, false
	}
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if given[name] && name != "username" && name != "password" {
			bad.add("email."+name, "must not be null (leave the field out to keep its value)")
		}
	}
	if given["username"] || given["password"] {
		// Null clears the credentials: one without the other is refused.
		cur.Username, cur.Password = "", ""
	}
	setIf(&cur.Host, r.Host)
	setIf(&cur.Port, r.Port)
	setIf(&cur.Username, r.Username)
	setIf(&cur.Password, r.Password)
	setIf(&cur.TLS, r.TLS)
	setIf(&cur.From, r.From)
	setIf(&cur.To, r.To)
	return cur, true
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func deref[T any](v *T) T {
	var zero T
	if v == nil {
		return zero
	}
	return *v
}

// validate checks a config with its own rules (channelconfig).
func validate(config any) error {
	switch c := config.(type) {
	case channelconfig.Chat:
		return c.Validate()
	case channelconfig.Webhook:
		return c.Validate()
	case channelconfig.Email:
		return c.Validate()
	}
	return fmt.Errorf("unknown channel config %T", config)
}

// apply merges the request into the stored settings cur and checks the
// result. Every field at fault is an *InvalidError.
func (r *PatchRequest) apply(cur settings) (settings, error) {
	var bad problems
	r.readOnly(&bad)
	for _, name := range []string{"name", "events", "enabled", "url", "email"} {
		if r.given[name] {
			bad.add(name, "must not be null (leave the field out to keep its value)")
		}
	}
	if len(bad) > 0 {
		return cur, bad.err()
	}
	next := cur
	if r.Name != nil {
		next.name = checkName(*r.Name, &bad)
	}
	if r.Events != nil {
		next.events = *r.Events
		checkEvents(next.events, &bad)
	}
	setIf(&next.enabled, r.Enabled)
	switch c := cur.config.(type) {
	case channelconfig.Chat:
		r.onlyURL(&bad)
		setIf(&c.URL, r.URL)
		next.config = c
	case channelconfig.Webhook:
		r.onlyURL(&bad)
		setIf(&c.URL, r.URL)
		next.config = c
	case channelconfig.Email:
		if r.URL != nil {
			bad.add("url", "is only for chat and webhook channels")
		}
		if r.Email != nil {
			var ok bool
			if c, ok = r.Email.merge(c, r.emailGiven, &bad); !ok {
				return cur, bad.err()
			}
		}
		next.config = c
	}
	if len(bad) > 0 {
		return cur, bad.err()
	}
	bad.addConfig(validate(next.config))
	return next, bad.err()
}

func (r *PatchRequest) onlyURL(bad *problems) {
	if r.Email != nil {
		bad.add("email", "is only for email channels")
	}
}

func (r *PatchRequest) readOnly(bad *problems) {
	for _, f := range []struct{ name, why string }{
		{"id", ""},
		{"type", ": create a channel of the other type instead"},
		{"health", ": the notifier records it"},
		{"createdAt", ""},
		{"updatedAt", ""},
	} {
		if _, ok := r.given[f.name]; ok {
			bad.add(f.name, "is read-only%s", f.why)
		}
	}
}
