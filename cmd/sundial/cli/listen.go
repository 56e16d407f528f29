package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

// localTimeout bounds a forwarded request. It is shorter than the gateway's
// 10 s ack timeout (after which the attempt fails as ack_timeout), so that
// the nack naming the real cause, the local server's silence, reaches the
// gateway first: at 10 s each, the two raced and the attempt's error was
// whichever came first.
const localTimeout = 9 * time.Second

// maxLocalBody is what is read of the local server's answer (and thrown
// away) so that its connection can be reused.
const maxLocalBody = 1 << 20

func listenCommand(s *state) *cobra.Command {
	var forwardTo string
	cmd := &cobra.Command{
		Use:   "listen --forward-to URL",
		Short: "Receive the project's deliveries on this machine and forward them to a local server",
		Long: "While listen runs, the project's deliveries come to it, through the gateway, instead of\n" +
			"going to the project's domain; each is POSTed to --forward-to joined with the hook's path,\n" +
			"with its original headers and body (signatures included). A 2xx answer acks it, a 202\n" +
			"accepts it (async, with the answer's Sundial-Async-Timeout), anything else nacks it.\n" +
			"Reconnects by itself; Ctrl-C stops it.",
		Example: "  sundial listen --forward-to http://localhost:3000\n" +
			"  sundial listen --forward-to http://localhost:3000/api --output json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if forwardTo == "" {
				return usagef("--forward-to is required (e.g. --forward-to http://localhost:3000)")
			}
			target, err := checkHTTPURL("--forward-to", forwardTo)
			if err != nil {
				return err
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			return s.listen(cmd.Context(), client, newForwarder(target))
		},
	}
	cmd.Flags().StringVar(&forwardTo, "forward-to", "", "the local server's base URL; the hook's path is appended")
	return cmd
}

// listen runs until ctx ends (a clean stop) or the server stops it.
func (s *state) listen(ctx context.Context, client *sundial.Client, f *forwarder) error {
	out := &lineWriter{s: s}
	err := client.Listen(ctx, func(ctx context.Context, d *sundial.ListenDelivery) sundial.Result {
		line, res := f.forward(ctx, d)
		out.delivery(line)
		return res
	}, sundial.WithForward(), sundial.WithMaxInFlight(forwardInFlight), sundial.WithListenObserver(func(e sundial.ListenEvent) { out.event(e, f.base) }))
	switch {
	case ctx.Err() != nil:
		out.stopped()
		return nil
	case errors.Is(err, sundial.ErrTicketRejected):
		return fmt.Errorf("%w\nThe ticket was refused: tickets last 60 s, so check this machine's clock, then run "+
			"`sundial listen` again to get a new one", err)
	case errors.Is(err, sundial.ErrAccessRevoked):
		return fmt.Errorf("%w\nThe API key was revoked (or the project deleted): run `sundial login` with a new key", err)
	}
	var apiErr *sundial.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%w\nThis Sundial server does not offer the listener (POST /v1/ws/ticket answered 404)", err)
		}
	}
	return err
}

// forwarder POSTs deliveries to the local server.
type forwarder struct {
	base   *url.URL
	client *http.Client
}

// forwardInFlight bounds the deliveries forwarded at once (Listen's
// handler calls in flight, the SDK's default) and is how many connections
// to the local server are kept for reuse.
const forwardInFlight = 64

func newForwarder(base *url.URL) *forwarder {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A local server is reached directly, whatever HTTP_PROXY says.
	tr.Proxy = nil
	// Up to forwardInFlight deliveries are forwarded at once: keep as many
	// connections for reuse. The default keeps 2, so a burst opened (and
	// left in TIME_WAIT) a connection for almost every delivery, which cost
	// the listener a large share of its CPU and of its rate
	// (docs/benchmarks.md, "The listener").
	tr.MaxIdleConnsPerHost = forwardInFlight
	return &forwarder{base: base, client: &http.Client{
		Transport: tr,
		Timeout:   localTimeout,
		// A redirect is the local server's answer, not a place to go.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// deliveryLine is what is printed of one delivery.
type deliveryLine struct {
	Time      time.Time `json:"time"`
	Status    int       `json:"status,omitempty"`
	Method    string    `json:"method"`
	URL       string    `json:"url"`
	LatencyMs int64     `json:"latencyMs"`
	HookID    string    `json:"hookId"`
	Attempt   int       `json:"attempt"`
	Result    string    `json:"result"`
	Error     string    `json:"error,omitempty"`
}

// hopHeaders are not the delivery's but its connection's: the local
// request has its own.
var hopHeaders = map[string]bool{
	"host": true, "content-length": true, "connection": true, "transfer-encoding": true,
	"keep-alive": true, "upgrade": true, "te": true, "trailer": true, "proxy-connection": true,
}

// forward POSTs d to the local server and turns its answer into the
// result: 2xx ack, 202 accept, anything else (or no answer) nack.
func (f *forwarder) forward(ctx context.Context, d *sundial.ListenDelivery) (deliveryLine, sundial.Result) {
	target := strings.TrimRight(f.base.String(), "/") + d.Path
	line := deliveryLine{Time: time.Now(), Method: http.MethodPost, URL: target, HookID: d.ID, Attempt: d.Attempt}
	fail := func(err error) (deliveryLine, sundial.Result) {
		line.LatencyMs = time.Since(line.Time).Milliseconds()
		line.Result, line.Error = "nack", err.Error()
		return line, sundial.Nack(err)
	}
	if d.Forward == nil {
		return fail(errors.New("the server sent the hook without its request (forwardRequest)"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(d.Forward.Body))
	if err != nil {
		return fail(err)
	}
	for k, v := range d.Forward.Headers {
		if !hopHeaders[strings.ToLower(k)] {
			req.Header[k] = []string{v} // as Sundial spells it
		}
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fail(fmt.Errorf("local server: %w", err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxLocalBody))
	resp.Body.Close()
	line.LatencyMs = time.Since(line.Time).Milliseconds()
	line.Status = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusAccepted:
		line.Result = "accept"
		return line, sundial.Accept(asyncTimeout(resp.Header))
	case resp.StatusCode/100 == 2:
		line.Result = "ack"
		return line, sundial.Ack()
	}
	err = fmt.Errorf("local answered %d", resp.StatusCode)
	line.Result, line.Error = "nack", err.Error()
	return line, sundial.Nack(err)
}

// asyncTimeout is a 202's Sundial-Async-Timeout (or <prefix>-Async-Timeout
// under a renamed header prefix), 0 when it has none.
func asyncTimeout(h http.Header) time.Duration {
	v := h.Get("Sundial-Async-Timeout")
	if v == "" {
		for k, vs := range h {
			if strings.HasSuffix(strings.ToLower(k), "-async-timeout") && len(vs) > 0 {
				v = vs[0]
				break
			}
		}
	}
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

// lineWriter prints the deliveries and the connection's events, one line
// each, whole lines only: handlers run concurrently.
type lineWriter struct {
	s  *state
	mu sync.Mutex
}

func (o *lineWriter) delivery(l deliveryLine) {
	o.print(l, func(w io.Writer) {
		status := "ERR"
		if l.Status != 0 {
			status = strconv.Itoa(l.Status)
		}
		fmt.Fprintf(w, "%s  %s  %s  %s  %dms  %s", l.Time.Format("15:04:05"), status, l.Method, l.URL, l.LatencyMs, l.HookID)
		if l.Error != "" && l.Status == 0 {
			fmt.Fprintf(w, "  (%s)", l.Error)
		}
		fmt.Fprintln(w)
	})
}

// eventLine is what is printed of a connection event with --output json.
type eventLine struct {
	Time        time.Time `json:"time"`
	Event       string    `json:"event"`
	ProjectID   string    `json:"projectId,omitempty"`
	ProjectName string    `json:"projectName,omitempty"`
	ForwardTo   string    `json:"forwardTo,omitempty"`
	HookID      string    `json:"hookId,omitempty"`
	Attempt     int       `json:"attempt,omitempty"`
	Code        string    `json:"code,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Message     string    `json:"message,omitempty"`
	RetryInMs   int64     `json:"retryInMs,omitempty"`
}

func (o *lineWriter) event(e sundial.ListenEvent, base *url.URL) {
	l := eventLine{Time: time.Now(), Event: string(e.Type), HookID: e.HookID, Attempt: e.Attempt, Code: e.Code}
	var text string
	switch e.Type {
	case sundial.ListenConnected:
		l.ProjectID, l.ProjectName, l.ForwardTo = e.Connection.ProjectID, e.Connection.ProjectName, base.String()
		text = fmt.Sprintf("Connected: deliveries of project %s (%s) go to %s. Ctrl-C to stop.",
			l.ProjectName, l.ProjectID, l.ForwardTo)
	case sundial.ListenDisconnected:
		l.Message, l.RetryInMs = fmt.Sprint(e.Err), e.Retry.Milliseconds()
		when := "now"
		if e.Retry > 0 {
			when = "in " + e.Retry.String()
		}
		text = fmt.Sprintf("Disconnected (%s); reconnecting %s.", l.Message, when)
	case sundial.ListenClosing:
		l.Reason, l.Message = e.Reason, e.Message
		text = fmt.Sprintf("The server is closing (%s); reconnecting.", firstNonEmpty(e.Message, e.Reason))
	case sundial.ListenAckTimeout:
		text = fmt.Sprintf("Hook %s (attempt %d): no answer within 10 s; the attempt failed.", e.HookID, e.Attempt)
	case sundial.ListenAsyncAck:
		text = fmt.Sprintf("Hook %s: accepted; answer its ack or nack URL by %s.", e.HookID, e.Deadline.Format(time.RFC3339))
	case sundial.ListenServerError:
		l.Message = e.Message
		text = fmt.Sprintf("The server refused a message: %s (%s).", e.Message, e.Code)
	default:
		return
	}
	o.print(l, func(w io.Writer) { fmt.Fprintln(w, text) })
}

func (o *lineWriter) stopped() {
	o.print(eventLine{Time: time.Now(), Event: "stopped"}, func(w io.Writer) { fmt.Fprintln(w, "Stopped.") })
}

func (o *lineWriter) print(v any, text func(io.Writer)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.s.emit(v, text)
}
