package calendar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// maxDepth bounds how deeply Parse follows nested arrays and objects; a
// schedule needs two levels, and the walk recurses once per level.
const maxDepth = 16

// fieldsOf lists the field names each object of a schedule may have, by
// path. Objects elsewhere (inside a list) are wrong types, which decoding
// reports.
var fieldsOf = map[string][]string{
	"schedule":      {"every", "frequency", "timezone", "time", "daysOfWeek", "daysOfMonth"},
	"schedule.time": {"hour", "minute"},
}

// Parse reads a schedule from JSON strictly and checks it: encoding/json
// accepts unknown fields, names in the wrong case, duplicated names,
// trailing data and invalid UTF-8, each of which is an error here naming
// the field. The gateway decodes request bodies with its own strict
// decoder into Spec and calls New; Parse is for everything else (files,
// tests) and states the same contract.
func Parse(data []byte) (Schedule, error) { return Current().Parse(data) }

// Parse is Parse with the zone from the release z.
func (z *Zones) Parse(data []byte) (Schedule, error) {
	spec, err := DecodeSpec(data)
	if err != nil {
		return Schedule{}, err
	}
	return z.New(spec)
}

// Stored is a stored schedule's slots between its start and its end (nil:
// none), its zone from the release z.
func (z *Zones) Stored(schedule []byte, startAt time.Time, endAt *time.Time) (Timetable, error) {
	sched, err := z.Parse(schedule)
	if err != nil {
		return Timetable{}, err
	}
	var end time.Time
	if endAt != nil {
		end = *endAt
	}
	return sched.Between(startAt, end)
}

// DecodeSpec reads a Spec from JSON strictly (see Parse) without checking
// it. Every failure is an *InvalidError.
func DecodeSpec(data []byte) (Spec, error) {
	if !utf8.Valid(data) {
		return Spec{}, invalid("schedule", "is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	first, err := dec.Token()
	if err != nil {
		return Spec{}, syntaxProblem(err)
	}
	if first != json.Delim('{') {
		return Spec{}, invalid("schedule", "must be a JSON object")
	}
	if err := walkObject(dec, "schedule", 1); err != nil {
		return Spec{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Spec{}, invalid("schedule", "has data after the JSON object")
	}
	var spec Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return Spec{}, typeProblem(err)
	}
	return spec, nil
}

// walkObject reads the members of an object whose '{' has been read,
// refusing unknown, wrongly cased and repeated names.
func walkObject(dec *json.Decoder, path string, depth int) error {
	known, checked := fieldsOf[path]
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxProblem(err)
		}
		name, _ := tok.(string)
		field := path + "." + name
		switch {
		case seen[name]:
			return invalid(field, "is given twice")
		case checked && !contains(known, name):
			return invalid(field, unknownField(known, name))
		}
		seen[name] = true
		if err := walkValue(dec, field, depth); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing '}'
	return syntaxProblem(err)
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	if depth >= maxDepth {
		return invalid(path, "is nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return syntaxProblem(err)
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, path, depth+1)
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token() // the closing ']'
		return syntaxProblem(err)
	}
	return nil
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func unknownField(known []string, name string) string {
	for _, n := range known {
		if strings.EqualFold(n, name) {
			return fmt.Sprintf("unknown field (field names are case-sensitive: did you mean %q?)", n)
		}
	}
	return fmt.Sprintf("unknown field (known: %s)", strings.Join(known, ", "))
}

func invalid(field, message string) error {
	return &InvalidError{Problems: []Problem{{Field: field, Message: message}}}
}

func syntaxProblem(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("schedule", "is not valid JSON: unexpected end of input")
	}
	return invalid("schedule", "is not valid JSON: "+err.Error())
}

// typeProblem names the field whose value has the wrong type; the walk
// has already refused bad syntax and unknown names.
func typeProblem(err error) error {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		return invalid("schedule", "is not valid: "+err.Error())
	}
	switch typeErr.Field {
	case "daysOfWeek":
		return invalid("schedule.daysOfWeek", `must be a list of day names, e.g. ["mon", "fri"]`)
	case "daysOfMonth":
		return invalid("schedule.daysOfMonth", "must be a list of days of the month, 1-31 or -1")
	case "":
		return invalid("schedule", "must be "+describe(typeErr.Type))
	}
	return invalid("schedule."+typeErr.Field, "must be "+describe(typeErr.Type))
}

func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}
