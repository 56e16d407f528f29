package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

// bulkAction is one of the SDK's bulk actions.
type bulkAction func(*sundial.HookService, context.Context, sundial.BulkActionRequest) (sundial.BulkResult, error)

// bulkFlags select the hooks of a bulk action by tag (with the time range
// and limit the API wants of such a selection), ask for a dry run, and for
// retry and replay give an edit.
type bulkFlags struct {
	tags               []string
	from, until        string
	limit              int
	dryRun             bool
	data, path, postAt string
}

// The range of postAt a selection by tag takes when --from or --until is
// left out: every instant a hook can be due at (years 0001 to 9999). It
// starts a second before 0001-01-01T00:00:00Z, which is Go's zero time,
// and the SDK leaves a zero StartTime out of the request.
const (
	everFrom  = "0000-12-31T23:59:59Z"
	everUntil = "9999-12-31T23:59:59.999999Z"
)

// bulkFields names the flag of each field the API may refuse.
var bulkFields = map[string]string{
	"tags": "--tag", "startTime": "--from", "endTime": "--until", "limit": "--limit",
	"edit": "--data, --path or --post-at", "edit.data": "--data", "edit.path": "--path", "edit.postAt": "--post-at",
}

func (f *bulkFlags) addSelection(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.tags, "tag", nil, "select the hooks with this tag instead of ids (repeat: with every one of them)")
	fl.StringVar(&f.from, "from", "", "with --tag: only hooks due at or after this RFC 3339 time")
	fl.StringVar(&f.until, "until", "", "with --tag: only hooks due before this RFC 3339 time")
	fl.IntVar(&f.limit, "limit", 1000, "with --tag: act on at most this many hooks, the earliest due first (1 to 1000)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "say how many hooks the action would act on, and the first of them, changing nothing")
}

func (f *bulkFlags) addEdit(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "", "a new data for each hook: a JSON object")
	fl.StringVar(&f.path, "path", "", "a new path for each hook (starts with /)")
	fl.StringVar(&f.postAt, "post-at", "", "a new due time for each hook, RFC 3339 (a past time is due at once)")
}

func (f bulkFlags) byTag() bool { return len(f.tags) > 0 }

// request checks the flags against the ids given and builds the request,
// naming the flag at fault.
func (f bulkFlags) request(cmd *cobra.Command, ids []string) (sundial.BulkActionRequest, error) {
	req := sundial.BulkActionRequest{DryRun: f.dryRun}
	switch {
	case len(ids) > 0 && f.byTag():
		return req, usageOf(cmd, "give hook ids or --tag, not both")
	case len(ids) > 0:
		if err := rangeNeedsTag(cmd); err != nil {
			return req, err
		}
		req.HookIDs = ids
	case f.byTag():
		var err error
		req.Tags, req.Limit = f.tags, f.limit
		if req.StartTime, err = flagTime("--from", f.from, everFrom); err != nil {
			return req, err
		}
		if req.EndTime, err = flagTime("--until", f.until, everUntil); err != nil {
			return req, err
		}
	default:
		return req, usageOf(cmd, "give one hook id or more, or --tag")
	}
	edit, err := f.edit()
	req.Edit = edit
	return req, err
}

// rangeNeedsTag refuses --from, --until and --limit without --tag.
func rangeNeedsTag(cmd *cobra.Command) error {
	for _, name := range []string{"from", "until", "limit"} {
		if cmd.Flags().Changed(name) {
			return usageOf(cmd, "--%s goes with --tag", name)
		}
	}
	return nil
}

// edit is the edit the flags give, or nil for none.
func (f bulkFlags) edit() (*sundial.HookEdit, error) {
	if f.data == "" && f.path == "" && f.postAt == "" {
		return nil, nil
	}
	e := &sundial.HookEdit{Path: f.path}
	if f.data != "" {
		data := strings.TrimSpace(f.data)
		if !json.Valid([]byte(data)) || !strings.HasPrefix(data, "{") {
			return nil, usagef("--data: not a JSON object: %s", f.data)
		}
		e.Data = json.RawMessage(data)
	}
	if f.postAt != "" {
		t, err := flagTime("--post-at", f.postAt, "")
		if err != nil {
			return nil, err
		}
		e.PostAt = t
	}
	return e, nil
}

// flagTime reads an RFC 3339 flag, def when it is empty.
func flagTime(flag, value, def string) (time.Time, error) {
	if value == "" {
		value = def
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return t, usagef("%s: %q is not an RFC 3339 time such as 2030-12-01T08:00:00Z", flag, value)
	}
	return t, nil
}

// bulkCommand is retry or replay: a bulk action on the hooks named, or on
// those with the tags given, optionally with an edit or as a dry run.
func bulkCommand(s *state, name, short string, action bulkAction) *cobra.Command {
	var f bulkFlags
	cmd := &cobra.Command{
		Use:   name + " ID... | " + name + " --tag TAG...",
		Short: short,
		Example: "  sundial hooks " + name + " 0192f0c4-9b1e-7c3a-8f00-1a2b3c4d5e6f --path /webhooks/v2\n" +
			"  sundial hooks " + name + " --tag campaign:spring --from 2030-01-01T00:00:00Z --dry-run",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, ids []string) error {
			return runBulk(cmd, s, name, action, f, ids)
		},
	}
	f.addSelection(cmd)
	f.addEdit(cmd)
	return cmd
}

// runBulk runs a bulk action (or its dry run) and says what it did.
func runBulk(cmd *cobra.Command, s *state, name string, action bulkAction, f bulkFlags, ids []string) error {
	req, err := f.request(cmd, ids)
	if err != nil {
		return err
	}
	client, err := s.apiClient()
	if err != nil {
		return err
	}
	res, err := action(client.Hooks, cmd.Context(), req)
	if err != nil {
		return namedFields(err, bulkFields)
	}
	return s.emit(res, func(w io.Writer) { printBulk(w, name, res, len(ids)) })
}

func printBulk(w io.Writer, name string, res sundial.BulkResult, named int) {
	switch {
	case res.DryRun:
		fmt.Fprintf(w, "%s would act on %d hook(s); nothing was changed.\n", name, res.Affected)
	case named > 0:
		fmt.Fprintf(w, "%s: %d of %d hook(s).\n", name, res.Affected, named)
	default:
		fmt.Fprintf(w, "%s: %d hook(s).\n", name, res.Affected)
	}
	if res.QuotaRefused {
		fmt.Fprintln(w, "The hook quota would refuse this replay: it would pass the hard cap.")
	}
	if len(res.Sample) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPOST AT\tPATH")
	for _, h := range res.Sample {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.ID, h.Status, h.PostAt.Format(time.RFC3339), h.Path)
	}
	_ = tw.Flush()
	if res.Affected > len(res.Sample) {
		fmt.Fprintf(w, "... and %d more.\n", res.Affected-len(res.Sample))
	}
}
