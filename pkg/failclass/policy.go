package failclass

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Action is what a failed attempt of a class does to its hook.
type Action string

// The actions. Retry is every class's default: what every failure did
// before projects could choose.
const (
	// Retry: the hook is retried while its retry budget allows.
	Retry Action = "retry"
	// Fail: the hook fails at once, whatever budget it has left.
	Fail Action = "fail"
	// Pause: the hook fails at once and its endpoint (the project's
	// domain) is paused until it is resumed (POST /v1/endpoints/resume).
	// Only for the classes that say something of the domain (Pausable).
	Pause Action = "pause"
)

// Pausable reports whether a class may pause its endpoint: the classes of
// a delivery to the domain (its name, connection, TLS, answer, async
// answer). A listener's failure went nowhere near the domain, and a
// refused or lost attempt says nothing of it.
func Pausable(word string) bool {
	switch word {
	case Listener, Refused, Lost:
		return false
	}
	_, ok := classes[word]
	return ok
}

// Policy is a project's choice of action per class: the classes it names,
// each with an action other than the default. A class it leaves out is
// retried.
type Policy map[string]Action

// Of is the action for a failure of class c.
func (p Policy) Of(c eventv1.FailureClass) Action {
	if a, ok := p[Word(c)]; ok {
		return a
	}
	return Retry
}

// Effective is the action of every class, the defaults included: what the
// API shows.
func (p Policy) Effective() map[string]string {
	out := make(map[string]string, len(words))
	for _, w := range words {
		out[w] = string(Retry)
	}
	for w, a := range p {
		out[w] = string(a)
	}
	return out
}

// Check reports why action cannot be chosen for the class named word: an
// unknown class, an unknown action, or pause for a class that cannot pause.
func Check(word, action string) error {
	if _, ok := classes[word]; !ok {
		return fmt.Errorf("unknown failure class %q; the classes are %s", word, strings.Join(Words(), ", "))
	}
	switch Action(action) {
	case Retry, Fail:
		return nil
	case Pause:
		if !Pausable(word) {
			return fmt.Errorf("%q cannot pause: a %s failure says nothing of the endpoint; retry or fail", action, word)
		}
		return nil
	}
	return fmt.Errorf("unknown action %q; want retry, fail or pause", action)
}

// With is p changed by set: a class set to an action takes it, a class
// set to retry (the default) or to "" is left out. p is not changed.
func (p Policy) With(set map[string]string) Policy {
	out := maps.Clone(p)
	if out == nil {
		out = Policy{}
	}
	for w, a := range set {
		if a == "" || Action(a) == Retry {
			delete(out, w)
			continue
		}
		out[w] = Action(a)
	}
	return out
}

// Decode reads a policy as the projects table stores it (a JSON object of
// class to action). Entries this release does not know, or whose action it
// cannot take, are left out: their classes are retried.
func Decode(raw []byte) (Policy, error) {
	if len(raw) == 0 {
		return Policy{}, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return Policy{}, fmt.Errorf("failure policy: %w", err)
	}
	p := make(Policy, len(m))
	for w, a := range m {
		if Check(w, a) == nil && Action(a) != Retry {
			p[w] = Action(a)
		}
	}
	return p, nil
}

// Encode is p as the projects table stores it.
func (p Policy) Encode() []byte {
	if p == nil {
		p = Policy{}
	}
	b, _ := json.Marshal(p) // a map of strings always encodes
	return b
}
