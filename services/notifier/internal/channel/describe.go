package channel

import (
	"context"
	"errors"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sundial-run/sundial/pkg/egress"
)

// describe puts a failed exchange in the words a user sees in a channel's
// health: egress's descriptions ("timeout after 10s", "destination <ip> is
// a loopback address", ...), and what only a notification meets: "SMTP 550
// mailbox unavailable", a send stopped by shutdown, a reset connection.
func describe(err error, timeout time.Duration) string {
	var smtpErr *textproto.Error
	switch {
	case errors.As(err, &smtpErr):
		return describeSMTP(smtpErr)
	case errors.Is(err, context.Canceled):
		return "stopped before the send finished"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	}
	return egress.Wording{}.Describe(err, timeout)
}

// enhancedCode is the RFC 3463 status ("5.1.1 ") many servers put before
// their words; the basic code already says as much.
var enhancedCode = regexp.MustCompile(`^[245]\.\d{1,3}\.\d{1,3}\s+`)

func describeSMTP(e *textproto.Error) string {
	msg := enhancedCode.ReplaceAllString(strings.TrimSpace(e.Msg), "")
	return egress.Clip("SMTP " + strconv.Itoa(e.Code) + " " + oneLine(msg))
}

// oneLine replaces control characters (line breaks above all) with spaces.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}
