package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

func hooksCommand(s *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Schedule, list, inspect, cancel, retry and replay hooks",
		// Cobra shows the help of a group given an unknown command and
		// exits 0: a typo must exit 2.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(scheduleCommand(s), listCommand(s), getCommand(s), cancelCommand(s),
		bulkCommand(s, "retry", "Retry failed hooks with a fresh retry budget, by id or by tag", (*sundial.HookService).BulkRetry),
		bulkCommand(s, "replay", "Deliver completed hooks again, as new hooks due now, by id or by tag", (*sundial.HookService).BulkReplay))
	return cmd
}

// scheduleFlags are the flags of `hooks schedule`.
type scheduleFlags struct {
	path, data, postAt, postAtLocal, timezone, postIn, key, orderingKey, idempotencyKey string
	tags                                                                                []string
}

// scheduleFields names the flag of each field the API may refuse.
var scheduleFields = map[string]string{
	"path": "--path", "data": "--data", "postAt": "--post-at", "postAtLocal": "--post-at-local",
	"timezone": "--timezone", "postIn": "--post-in", "key": "--key", "tags": "--tag", "orderingKey": "--ordering-key",
}

func scheduleCommand(s *state) *cobra.Command {
	var f scheduleFlags
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Schedule a hook: --path, --data, and one of --post-at, --post-at-local with --timezone, or --post-in",
		Example: "  sundial hooks schedule --path /webhooks/invoice --data '{\"invoice\": 1042}' --post-in 1h30m\n" +
			"  sundial hooks schedule --path /reminders --post-at-local 2030-12-01T09:00:00 --timezone Europe/Paris\n" +
			"  sundial hooks schedule --path /x --post-at 2030-12-01T08:00:00Z\n" +
			"  sundial hooks schedule --path /reminders --post-in 1d --key reminder:user-42\n" +
			"  sundial hooks schedule --path /accounts/events --post-in 10s --ordering-key account:42",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := f.request()
			if err != nil {
				return err
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			h, err := client.Hooks.Schedule(cmd.Context(), req)
			if err != nil {
				return namedFields(err, scheduleFields)
			}
			return s.emit(h, func(w io.Writer) {
				fmt.Fprintf(w, "Scheduled %s for %s (%s).\n", h.ID, h.PostAt.Format(time.RFC3339), h.Path)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.path, "path", "", "where to deliver, appended to the project's domain (starts with /)")
	fl.StringVar(&f.data, "data", "{}", "the hook's data: a JSON object")
	fl.StringVar(&f.postAt, "post-at", "", "when, as an RFC 3339 time (2030-12-01T08:00:00Z)")
	fl.StringVar(&f.postAtLocal, "post-at-local", "", "when, as a wall-clock time YYYY-MM-DDTHH:MM:SS in --timezone")
	fl.StringVar(&f.timezone, "timezone", "", "an IANA zone (Europe/Paris), with --post-at-local")
	fl.StringVar(&f.postIn, "post-in", "", "when, as a delay from now (90s, 1h30m, 2d)")
	fl.StringVar(&f.key, "key", "", "names the hook in the project: replaces the pending hook of this key, unless it was claimed for delivery")
	fl.StringArrayVar(&f.tags, "tag", nil, "a tag of the hook (repeat for more, up to 10)")
	fl.StringVar(&f.orderingKey, "ordering-key", "", "delivers the hook one at a time with the project's other hooks of this key, in postAt order")
	fl.StringVar(&f.idempotencyKey, "idempotency-key", "", "makes repeats of this command schedule one hook")
	return cmd
}

// request checks the flags and builds the request, naming the flag at
// fault.
func (f scheduleFlags) request() (sundial.ScheduleHookRequest, error) {
	req := sundial.ScheduleHookRequest{Path: f.path, PostIn: f.postIn, Key: f.key, Tags: f.tags, OrderingKey: f.orderingKey,
		IdempotencyKey: f.idempotencyKey}
	if f.path == "" {
		return req, usagef("--path is required")
	}
	data := strings.TrimSpace(f.data)
	if !json.Valid([]byte(data)) || !strings.HasPrefix(data, "{") {
		return req, usagef("--data: not a JSON object: %s", f.data)
	}
	req.Data = json.RawMessage(data)
	set := 0
	for _, v := range []string{f.postAt, f.postAtLocal, f.postIn} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return req, usagef("give exactly one of --post-at, --post-at-local (with --timezone) and --post-in")
	}
	if (f.postAtLocal != "") != (f.timezone != "") {
		return req, usagef("--timezone goes with --post-at-local, and only with it")
	}
	if f.postAt != "" {
		t, err := time.Parse(time.RFC3339, f.postAt)
		if err != nil {
			return req, usagef("--post-at: %q is not an RFC 3339 time such as 2030-12-01T08:00:00Z", f.postAt)
		}
		req.PostAt = t
	}
	if f.postAtLocal != "" {
		t, err := time.Parse("2006-01-02T15:04:05", f.postAtLocal)
		if err != nil {
			return req, usagef("--post-at-local: %q is not a wall-clock time such as 2030-12-01T09:00:00", f.postAtLocal)
		}
		req.PostAtLocal, req.Timezone = sundial.LocalTime(t), f.timezone
	}
	return req, nil
}

// hookStatuses are the values of --status.
var hookStatuses = []sundial.HookStatus{sundial.StatusPending, sundial.StatusRetry, sundial.StatusCompleted, sundial.StatusFailed}

func listCommand(s *state) *cobra.Command {
	var (
		p      sundial.ListHooksParams
		status string
		all    bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the project's hooks, one page (or --all)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !validStatus(status) {
				return usagef("--status: %q is not one of pending, retry, completed, failed", status)
			}
			p.Status = sundial.HookStatus(status)
			// An empty key would be left out of the request, and list
			// every hook instead of none.
			if cmd.Flags().Changed("ordering-key") && p.OrderingKey == "" {
				return usagef("--ordering-key: must not be empty")
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			page, err := listHooks(cmd, client, p, all)
			if err != nil {
				return namedFields(err, map[string]string{"limit": "--limit", "cursor": "--cursor",
					"sortBy": "--sort-by", "sortOrder": "--sort-order", "status": "--status", "tag": "--tag",
					"orderingKey": "--ordering-key"})
			}
			return s.emit(page, func(w io.Writer) { printHooks(w, page) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&status, "status", "", "pending, retry, completed or failed")
	fl.IntVar(&p.Limit, "limit", 0, "hooks per page, 1 to 1000 (default 100)")
	fl.StringVar(&p.Cursor, "cursor", "", "the page after the one that gave this cursor")
	fl.StringVar(&p.SortBy, "sort-by", "", "postAt or createdAt (default)")
	fl.StringVar(&p.SortOrder, "sort-order", "", "ASC or DESC (default)")
	fl.StringArrayVar(&p.Tags, "tag", nil, "only hooks with this tag (repeat: with every one of them)")
	fl.StringVar(&p.OrderingKey, "ordering-key", "", "only hooks of this ordering key")
	fl.BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func validStatus(s string) bool {
	for _, st := range hookStatuses {
		if string(st) == s {
			return true
		}
	}
	return false
}

// listHooks is one page, or with all every page from p's cursor on.
func listHooks(cmd *cobra.Command, client *sundial.Client, p sundial.ListHooksParams, all bool) (sundial.HookPage, error) {
	if !all {
		return client.Hooks.List(cmd.Context(), p)
	}
	page := sundial.HookPage{Data: []sundial.Hook{}}
	for h, err := range client.Hooks.All(cmd.Context(), p) {
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, h)
	}
	page.Meta.TotalItems = int64(len(page.Data))
	return page, nil
}

func printHooks(w io.Writer, page sundial.HookPage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPOST AT\tATTEMPTS\tPATH")
	for _, h := range page.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", h.ID, h.Status, h.PostAt.Format(time.RFC3339), h.Attempts, h.Path)
	}
	_ = tw.Flush()
	if page.Meta.NextCursor != "" {
		fmt.Fprintf(w, "More: --cursor %s\n", page.Meta.NextCursor)
	}
}

func getCommand(s *state) *cobra.Command {
	var (
		headers bool
		key     string
	)
	cmd := &cobra.Command{
		Use:   "get ID | get --key KEY",
		Short: "Show one hook, by its id or by its key",
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (key != "") || len(args) > 1 {
				return usageOf(cmd, "give one hook id, or --key")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			h, err := hookByIDOrKey(cmd.Context(), client, args, key)
			if err != nil {
				return namedFields(err, map[string]string{"key": "--key"})
			}
			attempts, err := client.Hooks.Attempts(cmd.Context(), h.ID)
			if err != nil {
				return err
			}
			v := struct {
				sundial.Hook
				AttemptHistory []sundial.HookAttempt `json:"attemptHistory"`
			}{h, attempts}
			return s.emit(v, func(w io.Writer) {
				printHook(w, h)
				printAttempts(w, attempts)
				if headers {
					printHeaders(w, attempts)
				}
			})
		},
	}
	cmd.Flags().BoolVar(&headers, "headers", false,
		"also show each attempt's request and response headers (--output json always has them)")
	cmd.Flags().StringVar(&key, "key", "", "the hook's key: its unfinished hook, or else its newest")
	return cmd
}

// printHeaders writes each attempt's recorded headers, the request's then
// the answer's, one "Name: value" line a value, names in order.
func printHeaders(w io.Writer, attempts []sundial.HookAttempt) {
	for _, a := range attempts {
		if a.RequestHeaders == nil && a.ResponseHeaders == nil {
			fmt.Fprintf(w, "\nAttempt %d: no headers recorded.\n", a.Attempt)
			continue
		}
		printSide(w, fmt.Sprintf("Attempt %d request headers", a.Attempt), a.RequestHeaders, a.RequestHeadersOmitted, "none recorded")
		printSide(w, fmt.Sprintf("Attempt %d response headers", a.Attempt), a.ResponseHeaders, a.ResponseHeadersOmitted, "no answer")
	}
}

func printSide(w io.Writer, title string, h map[string][]string, omitted int, none string) {
	fmt.Fprintf(w, "\n%s", title)
	if omitted > 0 {
		fmt.Fprintf(w, " (%d more left out)", omitted)
	}
	if len(h) == 0 {
		fmt.Fprintf(w, ": %s.\n", none)
		return
	}
	fmt.Fprintln(w, ":")
	for _, name := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[name] {
			fmt.Fprintf(w, "  %s: %s\n", name, v)
		}
	}
}

// hookByIDOrKey is the hook of the one id in args, or else of key.
func hookByIDOrKey(ctx context.Context, client *sundial.Client, args []string, key string) (sundial.Hook, error) {
	if key != "" {
		return client.Hooks.GetByKey(ctx, key)
	}
	return client.Hooks.Get(ctx, args[0])
}

// printAttempts writes a hook's attempts as a table, oldest first.
func printAttempts(w io.Writer, attempts []sundial.HookAttempt) {
	if len(attempts) == 0 {
		fmt.Fprintln(w, "\nNo attempt yet.")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tSTARTED\tDURATION\tOUTCOME\tSTATUS\tCLASS\tERROR")
	for _, a := range attempts {
		status, outcome := "", a.Outcome
		if a.StatusCode != 0 {
			status = fmt.Sprint(a.StatusCode)
		}
		if a.Async != nil {
			outcome += " (" + a.Async.State + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.StartedAt.Format(time.RFC3339),
			time.Duration(a.DurationSeconds*float64(time.Second)).Round(time.Millisecond), outcome, status, a.FailureClass, a.Error)
	}
	_ = tw.Flush()
}

func printHook(w io.Writer, h sundial.Hook) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("ID", h.ID)
	row("Key", h.Key)
	row("Tags", strings.Join(h.Tags, ", "))
	row("Ordering key", h.OrderingKey)
	row("Status", string(h.Status))
	row("URL", "https://"+h.Domain+h.Path)
	row("Post at", h.PostAt.Format(time.RFC3339))
	if h.PostAtLocal != "" {
		row("Local time", fmt.Sprintf("%s %s (tz database %s)", h.PostAtLocal, h.Timezone, h.TZData))
	}
	row("Attempts", fmt.Sprint(h.Attempts))
	if !h.TryAt.IsZero() {
		row("Try at", h.TryAt.Format(time.RFC3339))
	}
	row("Failure", h.FailureError)
	row("Failure class", h.FailureClass)
	row("Created", h.CreatedAt.Format(time.RFC3339))
	row("Data", string(h.Data))
	_ = tw.Flush()
}

func cancelCommand(s *state) *cobra.Command {
	var (
		key string
		sel bulkFlags
	)
	cmd := &cobra.Command{
		Use:   "cancel ID... | cancel --key KEY | cancel --tag TAG...",
		Short: "Cancel hooks: by id or key (deleted with their attempts, whatever their status), or the pending ones by tag",
		Example: "  sundial hooks cancel 0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f\n" +
			"  sundial hooks cancel --tag campaign:spring --dry-run",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case key != "" && (len(args) > 0 || sel.byTag()):
				return usageOf(cmd, "give hook ids, --key or --tag, one of them")
			case key != "" || sel.byTag():
				return nil
			case sel.dryRun:
				return usageOf(cmd, "--dry-run goes with --tag: a cancel by id deletes each hook whatever its status")
			}
			if err := rangeNeedsTag(cmd); err != nil {
				return err
			}
			return idArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			if sel.byTag() {
				return runBulk(cmd, s, "cancel", (*sundial.HookService).BulkCancel, sel, ids)
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			if key != "" {
				return cancelByKey(cmd.Context(), s, client, key)
			}
			done := []string{}
			for _, id := range ids {
				if err := client.Hooks.Delete(cmd.Context(), id); err != nil {
					// What was cancelled stays said: a retry of the
					// command then gives the others.
					_ = s.emit(struct {
						Cancelled []string `json:"cancelled"`
					}{done}, func(w io.Writer) { printCancelled(w, done) })
					return fmt.Errorf("cancel %s: %w", id, err)
				}
				done = append(done, id)
			}
			return s.emit(struct {
				Cancelled []string `json:"cancelled"`
			}{done}, func(w io.Writer) { printCancelled(w, done) })
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "cancel the hook of this key (its unfinished hook, or else its newest) instead")
	sel.addSelection(cmd)
	return cmd
}

// cancelByKey cancels the hook a key names.
func cancelByKey(ctx context.Context, s *state, client *sundial.Client, key string) error {
	if err := client.Hooks.DeleteByKey(ctx, key); err != nil {
		return namedFields(err, map[string]string{"key": "--key"})
	}
	return s.emit(struct {
		CancelledKey string `json:"cancelledKey"`
	}{key}, func(w io.Writer) { fmt.Fprintf(w, "Cancelled the hook of key %q.\n", key) })
}

func printCancelled(w io.Writer, ids []string) {
	for _, id := range ids {
		fmt.Fprintf(w, "Cancelled %s.\n", id)
	}
}
