package dashboard

import (
	"errors"
	"strconv"
	"strings"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// formProblems are the problems of a create or edit form by the form field
// they are shown next to ("" for the top of the form). Each message names
// the API's field at fault ("schedule.time.hour: must be 0-23"), so that
// what the page says is what the API would answer.
type formProblems map[string]string

// place records a problem of the API's field under the form field it
// belongs to: the longest of fields that is field itself or its start
// ("schedule.time" for "schedule.time.hour", "steps" for
// "steps[2].path"), else the top of the form.
func (p formProblems) place(fields []string, field, message string) {
	at := ""
	for _, f := range fields {
		belongs := field == f || strings.HasPrefix(field, f+".") || strings.HasPrefix(field, f+"[")
		if belongs && len(f) > len(at) {
			at = f
		}
	}
	if field != "" {
		message = field + ": " + message
	}
	if prev, ok := p[at]; ok {
		message = prev + "; " + message
	}
	p[at] = message
}

// merge adds the problems the service found to those the form's own
// reading found (a number that does not parse, JSON that does not
// decode), which are kept alone where both name the same form field: the
// service saw no value there, and would only say that one is required.
func (p formProblems) merge(service formProblems) formProblems {
	for at, message := range service {
		if _, ok := p[at]; !ok {
			p[at] = message
		}
	}
	return p
}

// decodeJSON decodes a form field's JSON into v as the API decodes a
// body's member (strictjson.DecodeValue), placing a failure under the
// field. An empty field leaves v alone: the service says what it needs.
func (p formProblems) decodeJSON(fields []string, field, text string, v any) {
	if strings.TrimSpace(text) == "" {
		return
	}
	err := strictjson.DecodeValue([]byte(text), field, v)
	var bad *strictjson.Error
	if errors.As(err, &bad) {
		p.place(fields, bad.Field, bad.Message)
	}
}

// integer reads a whole number of a form field: nil when the field is
// empty (the service says whether one is required), a problem when it is
// not a number.
func (p formProblems) integer(fields []string, field, text string) *int {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		p.place(fields, field, "must be a whole number")
		return nil
	}
	return &n
}

// words splits a list typed into one field, separated by spaces or commas.
func words(text string) []string {
	return strings.Fields(strings.ReplaceAll(text, ",", " "))
}
