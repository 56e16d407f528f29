package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

func bulkJobsCommand(s *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bulk-jobs",
		Short: "Retry, replay or cancel every hook of a time range, however many, as a job the gateways run",
		Long: "A bulk job is a bulk action (hooks retry, replay or cancel) over a whole selection: every hook\n" +
			"due in a time range, optionally narrowed by endpoint and tags. The gateways work on it in\n" +
			"batches after `create` answers; `get` shows its progress and, once it has ended, its report.",
		// As for hooks: a typo must exit 2, not show the help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(bulkJobCreateCommand(s), bulkJobGetCommand(s), bulkJobListCommand(s), bulkJobCancelCommand(s))
	return cmd
}

// bulkJobFields names the flag of each field the API may refuse.
var bulkJobFields = map[string]string{
	"action": "--action", "startTime": "--start", "endTime": "--end", "endpointKey": "--endpoint-key", "tags": "--tag",
	"edit": "--data, --path or --post-at", "edit.data": "--data", "edit.path": "--path", "edit.postAt": "--post-at",
	"limit": "--limit", "cursor": "--cursor",
}

// bulkJobFlags are create's flags; the edit's are bulkFlags'.
type bulkJobFlags struct {
	edit         bulkFlags
	action       string
	start, end   string
	endpointKey  string
	tags         []string
	dryRun, wait bool
	pollEvery    time.Duration
}

func bulkJobCreateCommand(s *state) *cobra.Command {
	var f bulkJobFlags
	cmd := &cobra.Command{
		Use:   "create --action retry|replay|cancel --start TIME --end TIME",
		Short: "Start a bulk job over the hooks due from --start to --end (or say what it would act on, with --dry-run)",
		Example: "  sundial bulk-jobs create --action cancel --start 2030-12-01T00:00:00Z --end 2030-12-02T00:00:00Z --tag campaign:spring --dry-run\n" +
			"  sundial bulk-jobs create --action retry --start 2030-12-01T00:00:00Z --end 2030-12-02T00:00:00Z --endpoint-key /webhooks/orders --path /webhooks/v2/orders --wait",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBulkJobCreate(cmd, s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.action, "action", "", "retry (failed hooks), replay (completed hooks) or cancel (pending and retry hooks)")
	fl.StringVar(&f.start, "start", "", "the hooks due at or after this RFC 3339 time")
	fl.StringVar(&f.end, "end", "", "the hooks due before this RFC 3339 time")
	fl.StringVar(&f.endpointKey, "endpoint-key", "", "only the hooks delivered to this path (without a query string: whatever their query string)")
	fl.StringArrayVar(&f.tags, "tag", nil, "only the hooks with this tag (repeat: with every one of them)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "say how many hooks the job would act on, and the first of them, creating nothing")
	fl.BoolVar(&f.wait, "wait", false, "wait until the job ends, showing its progress; exit 1 unless it completed")
	fl.DurationVar(&f.pollEvery, "poll-interval", time.Second, "with --wait: how often to read the job's progress")
	f.edit.addEdit(cmd)
	return cmd
}

// request checks the flags and builds the request, naming the flag at
// fault.
func (f bulkJobFlags) request(cmd *cobra.Command) (sundial.BulkJobRequest, error) {
	req := sundial.BulkJobRequest{Action: f.action, EndpointKey: f.endpointKey, Tags: f.tags}
	for _, flag := range []string{"action", "start", "end"} {
		if !cmd.Flags().Changed(flag) {
			return req, usageOf(cmd, "--%s is required", flag)
		}
	}
	var err error
	if req.StartTime, err = flagTime("--start", f.start, ""); err != nil {
		return req, err
	}
	if req.EndTime, err = flagTime("--end", f.end, ""); err != nil {
		return req, err
	}
	if f.wait && f.dryRun {
		return req, usageOf(cmd, "--wait goes with a job, not --dry-run")
	}
	if f.pollEvery <= 0 {
		return req, usageOf(cmd, "--poll-interval must be positive")
	}
	req.Edit, err = f.edit.edit()
	return req, err
}

func runBulkJobCreate(cmd *cobra.Command, s *state, f bulkJobFlags) error {
	req, err := f.request(cmd)
	if err != nil {
		return err
	}
	client, err := s.apiClient()
	if err != nil {
		return err
	}
	if f.dryRun {
		dry, err := client.Hooks.DryRunBulkJob(cmd.Context(), req)
		if err != nil {
			return namedFields(err, bulkJobFields)
		}
		return s.emit(dry, func(w io.Writer) { printBulkJobDryRun(w, req.Action, dry) })
	}
	job, err := client.Hooks.CreateBulkJob(cmd.Context(), req)
	if err != nil {
		return namedFields(err, bulkJobFields)
	}
	if !f.wait {
		return s.emit(job, func(w io.Writer) {
			printBulkJob(w, job)
			fmt.Fprintf(w, "Follow it with `sundial bulk-jobs get %s`.\n", job.ID)
		})
	}
	return s.waitBulkJob(cmd.Context(), client, job, f.pollEvery)
}

// waitBulkJob reads the job every poll until it ends, saying each change
// of its progress (on stderr with --output json, whose stdout is the job),
// then shows it. A job that did not complete exits 1.
func (s *state) waitBulkJob(ctx context.Context, client *sundial.Client, job sundial.BulkJob, poll time.Duration) error {
	progress := s.env.Stdout
	if s.json() {
		progress = s.env.Stderr
	}
	printBulkJobProgress(progress, job)
	last := job
	t := time.NewTicker(poll)
	defer t.Stop()
	for !job.Ended() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for bulk job %s, which goes on (`sundial bulk-jobs get %s`): %w", job.ID, job.ID, ctx.Err())
		case <-t.C:
		}
		var err error
		if job, err = client.Hooks.BulkJob(ctx, job.ID); err != nil {
			return fmt.Errorf("bulk job %s: %w", last.ID, err)
		}
		if job.State != last.State || job.Selected != last.Selected {
			printBulkJobProgress(progress, job)
		}
		last = job
	}
	if err := s.emit(job, func(w io.Writer) { printBulkJob(w, job) }); err != nil {
		return err
	}
	if job.State != sundial.BulkJobCompleted {
		return exitCode(ExitError)
	}
	return nil
}

// percent is a progress from 0 to 1 in whole percent, rounded down so
// that a job shows 100% only once it is done.
func percent(p float64) int { return int(math.Floor(p*100 + 1e-9)) }

// printBulkJobProgress is one line of a waited job's progress.
func printBulkJobProgress(w io.Writer, j sundial.BulkJob) {
	fmt.Fprintf(w, "%s: %d%% (%d of about %d hook(s) read, %d acted on, %d batch(es))\n",
		j.State, percent(j.Progress), j.Selected, j.Total, j.Affected, j.Batches)
}

func bulkJobGetCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a bulk job: its selection, state, progress and counts",
		Args:  oneBulkJob,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withBulkJob(cmd, args[0], (*sundial.HookService).BulkJob)
		},
	}
}

func bulkJobCancelCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Stop a running bulk job before its next batch (what it did stays done)",
		Args:  oneBulkJob,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withBulkJob(cmd, args[0], (*sundial.HookService).CancelBulkJob)
		},
	}
}

// oneBulkJob wants one job id.
func oneBulkJob(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageOf(cmd, "give one bulk job id")
	}
	return nil
}

// withBulkJob calls op on the job and shows the job it returns.
func (s *state) withBulkJob(cmd *cobra.Command, id string,
	op func(*sundial.HookService, context.Context, string) (sundial.BulkJob, error)) error {
	client, err := s.apiClient()
	if err != nil {
		return err
	}
	j, err := op(client.Hooks, cmd.Context(), id)
	if err != nil {
		return fmt.Errorf("bulk job %s: %w", id, err)
	}
	return s.emit(j, func(w io.Writer) { printBulkJob(w, j) })
}

func printBulkJob(w io.Writer, j sundial.BulkJob) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ID:\t%s\n", j.ID)
	fmt.Fprintf(tw, "Action:\t%s\n", j.Action)
	fmt.Fprintf(tw, "Selection:\t%s\n", selectionText(j.Selection))
	if e := j.Edit; e != nil {
		fmt.Fprintf(tw, "Edit:\t%s\n", editText(e))
	}
	fmt.Fprintf(tw, "State:\t%s\n", j.State)
	if j.Error != nil {
		fmt.Fprintf(tw, "Error:\t%s: %s\n", j.Error.Code, j.Error.Message)
	}
	fmt.Fprintf(tw, "Progress:\t%d%% (an estimate)\n", percent(j.Progress))
	fmt.Fprintf(tw, "Total:\t%d (counted at creation)\n", j.Total)
	fmt.Fprintf(tw, "Read:\t%d\n", j.Selected)
	fmt.Fprintf(tw, "Acted on:\t%d\n", j.Affected)
	fmt.Fprintf(tw, "Skipped:\t%d\n", j.Skipped)
	fmt.Fprintf(tw, "Batches:\t%d\n", j.Batches)
	fmt.Fprintf(tw, "Created:\t%s\n", j.CreatedAt.UTC().Format(time.RFC3339))
	if j.FinishedAt != nil {
		fmt.Fprintf(tw, "Finished:\t%s\n", j.FinishedAt.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
}

// selectionText is a job's selection on one line.
func selectionText(sel sundial.BulkJobSelection) string {
	out := sel.StartTime.UTC().Format(time.RFC3339) + " to " + sel.EndTime.UTC().Format(time.RFC3339)
	if sel.EndpointKey != "" {
		out += ", endpoint " + sel.EndpointKey
	}
	if sel.SequenceID != "" {
		out += ", sequence " + sel.SequenceID
	}
	if len(sel.Tags) > 0 {
		out += ", tags " + strings.Join(sel.Tags, " ")
	}
	return out
}

// editText is a job's edit on one line.
func editText(e *sundial.HookEdit) string {
	var parts []string
	if e.Path != "" {
		parts = append(parts, "path "+e.Path)
	}
	if e.Data != nil {
		parts = append(parts, "new data")
	}
	if !e.PostAt.IsZero() {
		parts = append(parts, "postAt "+e.PostAt.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, ", ")
}

func printBulkJobDryRun(w io.Writer, action string, dry sundial.BulkJobDryRun) {
	printBulk(w, action, sundial.BulkResult{Affected: int(dry.Total), DryRun: true, Sample: dry.Sample}, 0)
}

func bulkJobListCommand(s *state) *cobra.Command {
	var (
		p   sundial.ListBulkJobsParams
		all bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the project's bulk jobs, newest first, one page (or --all)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			page, err := listBulkJobs(cmd.Context(), client, p, all)
			if err != nil {
				return namedFields(err, bulkJobFields)
			}
			return s.emit(page, func(w io.Writer) { printBulkJobs(w, page) })
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "jobs per page, 1 to 100 (default 20)")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "the page after the one that gave this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func listBulkJobs(ctx context.Context, client *sundial.Client, p sundial.ListBulkJobsParams, all bool) (sundial.BulkJobPage, error) {
	if !all {
		return client.Hooks.ListBulkJobs(ctx, p)
	}
	page := sundial.BulkJobPage{Data: []sundial.BulkJob{}}
	for j, err := range client.Hooks.AllBulkJobs(ctx, p) {
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, j)
	}
	page.Meta.TotalItems = int64(len(page.Data))
	return page, nil
}

func printBulkJobs(w io.Writer, page sundial.BulkJobPage) {
	if len(page.Data) == 0 {
		fmt.Fprintln(w, "No bulk jobs.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTION\tSTATE\tPROGRESS\tTOTAL\tREAD\tACTED ON\tSKIPPED\tCREATED")
	for _, j := range page.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d%%\t%d\t%d\t%d\t%d\t%s\n", j.ID, j.Action, j.State, percent(j.Progress),
			j.Total, j.Selected, j.Affected, j.Skipped, j.CreatedAt.UTC().Format(time.RFC3339))
	}
	_ = tw.Flush()
	if page.Meta.NextCursor != "" {
		fmt.Fprintf(w, "More: --cursor %s\n", page.Meta.NextCursor)
	}
}
