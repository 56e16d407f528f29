package cli

import (
	"errors"
	"fmt"
	"strings"

	sundial "github.com/sundial-run/sundial/sdk"
)

// flagged is the error of a command whose request fields come from flags:
// the tool names the flag the user typed, not the API's field.
type flagged struct {
	error
	flags map[string]string
}

func (f flagged) Unwrap() error { return f.error }

// namedFields marks err, when the API refused fields, with the flag of each
// field, for say.
func namedFields(err error, flags map[string]string) error {
	if err == nil {
		return nil
	}
	return flagged{error: err, flags: flags}
}

// say is err as the tool prints it. An API error is said once and in the
// tool's words: each field at fault with its message, under the flag's
// name when the command has one, then the status, code and request id
// (the SDK's own text repeats the message and starts with the package's
// name, which the tool already prints first).
func say(err error) string {
	msg := err.Error()
	var apiErr *sundial.APIError
	if !errors.As(err, &apiErr) {
		return msg
	}
	var f flagged
	var flags map[string]string
	if errors.As(err, &f) {
		flags = f.flags
	}
	return strings.Replace(msg, apiErr.Error(), describeAPIError(apiErr, flags), 1)
}

func describeAPIError(e *sundial.APIError, flags map[string]string) string {
	var parts []string
	for _, d := range e.Details {
		name := d.Field
		if flag, ok := flags[d.Field]; ok {
			name = flag
		}
		parts = append(parts, name+": "+d.Message)
	}
	if len(parts) == 0 {
		parts = append(parts, e.Message)
	}
	status := fmt.Sprint(e.StatusCode)
	if e.Code != "" {
		status += " " + e.Code
	}
	if e.RequestID != "" {
		status += ", request " + e.RequestID
	}
	return strings.Join(parts, "; ") + " (" + status + ")"
}
