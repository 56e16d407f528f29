// Package failclass names the classes of failed attempts and holds a
// project's failure policy (docs/choices.md, "Failure classes"). The class
// is one enum, eventv1.FailureClass; this package gives each its one word,
// which the attempts table, the API, the dashboard, the metrics and the
// alerts use, and the actions a project may choose per class.
package failclass

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// The words of the classes, in the enum's order.
const (
	DNS          = "dns"
	Connect      = "connect"
	TLS          = "tls"
	Timeout      = "timeout"
	Redirect     = "redirect"
	ClientError  = "4xx"
	Gone         = "410"
	RateLimited  = "429"
	ServerError  = "5xx"
	TooLarge     = "too_large"
	Listener     = "listener"
	Nack         = "nack"
	AsyncTimeout = "async_timeout"
	Refused      = "refused"
	Lost         = "lost"
)

// words maps each class to its word; the unspecified class has none.
var words = map[eventv1.FailureClass]string{
	eventv1.FailureClass_FAILURE_CLASS_DNS:           DNS,
	eventv1.FailureClass_FAILURE_CLASS_CONNECT:       Connect,
	eventv1.FailureClass_FAILURE_CLASS_TLS:           TLS,
	eventv1.FailureClass_FAILURE_CLASS_TIMEOUT:       Timeout,
	eventv1.FailureClass_FAILURE_CLASS_REDIRECT:      Redirect,
	eventv1.FailureClass_FAILURE_CLASS_CLIENT_ERROR:  ClientError,
	eventv1.FailureClass_FAILURE_CLASS_GONE:          Gone,
	eventv1.FailureClass_FAILURE_CLASS_RATE_LIMITED:  RateLimited,
	eventv1.FailureClass_FAILURE_CLASS_SERVER_ERROR:  ServerError,
	eventv1.FailureClass_FAILURE_CLASS_TOO_LARGE:     TooLarge,
	eventv1.FailureClass_FAILURE_CLASS_LISTENER:      Listener,
	eventv1.FailureClass_FAILURE_CLASS_NACK:          Nack,
	eventv1.FailureClass_FAILURE_CLASS_ASYNC_TIMEOUT: AsyncTimeout,
	eventv1.FailureClass_FAILURE_CLASS_REFUSED:       Refused,
	eventv1.FailureClass_FAILURE_CLASS_LOST:          Lost,
}

// classes maps each word back to its class.
var classes = func() map[string]eventv1.FailureClass {
	m := make(map[string]eventv1.FailureClass, len(words))
	for c, w := range words {
		m[w] = c
	}
	return m
}()

// Word is the class's word, "" for the unspecified class (and for a value
// this release does not know).
func Word(c eventv1.FailureClass) string { return words[c] }

// Parse is the class of a word, and false for a word that names none.
func Parse(word string) (eventv1.FailureClass, bool) {
	c, ok := classes[word]
	return c, ok
}

// Words are the words of every class, in the enum's order.
func Words() []string {
	out := make([]string, 0, len(words))
	for c := range eventv1.FailureClass_name {
		if w := words[eventv1.FailureClass(c)]; w != "" {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(classes[a], classes[b]) })
	return out
}

// OfStatus is the class of a failed answer's HTTP status: 410, 413, 429,
// another 4xx, a 5xx or a 3xx (any other non-2xx status is a 4xx's
// sibling for the policy: the receiver answered, and did not take it).
func OfStatus(code int) eventv1.FailureClass {
	switch {
	case code == http.StatusGone:
		return eventv1.FailureClass_FAILURE_CLASS_GONE
	case code == http.StatusRequestEntityTooLarge:
		return eventv1.FailureClass_FAILURE_CLASS_TOO_LARGE
	case code == http.StatusTooManyRequests:
		return eventv1.FailureClass_FAILURE_CLASS_RATE_LIMITED
	case code >= 500:
		return eventv1.FailureClass_FAILURE_CLASS_SERVER_ERROR
	case code >= 300 && code < 400:
		return eventv1.FailureClass_FAILURE_CLASS_REDIRECT
	}
	return eventv1.FailureClass_FAILURE_CLASS_CLIENT_ERROR
}
