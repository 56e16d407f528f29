package sundial

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Result is what a delivery handler decides: Ack, Accept or Nack.
type Result struct {
	status  int
	timeout time.Duration
	err     error
}

// Ack completes the hook: the handler answers 200.
func Ack() Result { return Result{status: http.StatusOK} }

// Accept answers 202: the work goes on after the answer, and the hook stays
// pending until the delivery's AckURL or NackURL is called (AsyncService),
// or timeout passes (a failed attempt). timeout is sent as
// Sundial-Async-Timeout, rounded up to whole seconds, within 1 s to 24 h;
// 0 leaves the project's asyncTimeoutSecs.
func Accept(timeout time.Duration) Result {
	return Result{status: http.StatusAccepted, timeout: timeout}
}

// Nack fails the attempt: the handler answers 500 and Sundial retries the
// hook with its retry settings. err's text is the answer's body, which
// Sundial keeps as the attempt's response excerpt (its first 1024 bytes).
func Nack(err error) Result {
	if err == nil {
		err = errors.New("nack")
	}
	return Result{status: http.StatusInternalServerError, err: err}
}

// HandlerFunc handles one checked delivery.
type HandlerFunc func(ctx context.Context, d *Delivery) Result

// maxAsyncTimeout is the longest Sundial-Async-Timeout the API honours.
const maxAsyncTimeout = 24 * time.Hour

// NewHandler returns an http.Handler for Sundial's deliveries: it reads the
// body (bounded, see WithMaxBodyBytes), checks the signature with keys (see
// NewVerifier) and calls fn with the delivery. A bad or missing signature
// answers 401, a body over the bound 413, a body that is not a delivery
// 400, a method other than POST 405; fn is not called for any of them.
func NewHandler(keys []string, fn HandlerFunc, opts ...VerifyOption) http.Handler {
	v := NewVerifier(keys, opts...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "deliveries are POSTed", http.StatusMethodNotAllowed)
			return
		}
		d, err := v.ParseDelivery(r)
		switch {
		case errors.Is(err, ErrBodyTooLarge):
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		case isSignatureError(err):
			// Say no more than that: the details help only a forger.
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "not a delivery", http.StatusBadRequest)
			return
		}
		v.write(w, fn(r.Context(), d))
	})
}

func isSignatureError(err error) bool {
	return errors.Is(err, ErrNoSignature) || errors.Is(err, ErrBadSignature) ||
		errors.Is(err, ErrTimestamp) || errors.Is(err, ErrNoKeys)
}

func (v *Verifier) write(w http.ResponseWriter, res Result) {
	switch res.status {
	case http.StatusAccepted:
		if res.timeout > 0 {
			secs := int64(min(res.timeout, maxAsyncTimeout)+time.Second-1) / int64(time.Second)
			w.Header().Set(v.headers.asyncTimeout, strconv.FormatInt(secs, 10))
		}
		w.WriteHeader(http.StatusAccepted)
	case http.StatusInternalServerError:
		http.Error(w, res.err.Error(), http.StatusInternalServerError)
	default:
		// The zero Result too: a handler that returned nothing handled the
		// delivery.
		w.WriteHeader(http.StatusOK)
	}
}
