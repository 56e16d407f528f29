package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

func sequencesCommand(s *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sequences",
		Short: "List, inspect, trigger, pause and resume sequences, and preview their runs",
		// As for hooks: a typo must exit 2, not show the help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(sequenceListCommand(s), sequenceGetCommand(s), sequenceTriggerCommand(s),
		sequenceStateCommand(s, "pause", "Pause a sequence: slots that pass meanwhile never run", (*sundial.SequenceService).Pause),
		sequenceStateCommand(s, "resume", "Resume a paused sequence from now", (*sundial.SequenceService).Resume),
		sequencePreviewCommand(s), sequenceRunsCommand(s))
	return cmd
}

// oneSequence wants one sequence, by name or id.
func oneSequence(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageOf(cmd, "give one sequence name or id")
	}
	return nil
}

// uuidPattern is the shape of a sequence id; a name may have it too.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// findSequence resolves a name or an id: what looks like an id is tried as
// one first, then as a name (a name may look like an id).
func findSequence(ctx context.Context, client *sundial.Client, ref string) (sundial.Sequence, error) {
	if uuidPattern.MatchString(ref) {
		seq, err := client.Sequences.Get(ctx, ref)
		var apiErr *sundial.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
			return seq, err
		}
	}
	seq, err := client.Sequences.FindByName(ctx, ref)
	if errors.Is(err, sundial.ErrSequenceNotFound) {
		return seq, fmt.Errorf("sequence %q: no sequence of the project has this name or id", ref)
	}
	return seq, err
}

// withSequence runs do on the sequence that args name.
func (s *state) withSequence(cmd *cobra.Command, args []string,
	do func(ctx context.Context, client *sundial.Client, seq sundial.Sequence) error) error {
	client, err := s.apiClient()
	if err != nil {
		return err
	}
	seq, err := findSequence(cmd.Context(), client, args[0])
	if err != nil {
		return err
	}
	return do(cmd.Context(), client, seq)
}

func sequenceListCommand(s *state) *cobra.Command {
	var (
		p   sundial.ListSequencesParams
		all bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the project's sequences, one page (or --all)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			page, err := listSequences(cmd.Context(), client, p, all)
			if err != nil {
				return namedFields(err, map[string]string{"limit": "--limit", "cursor": "--cursor"})
			}
			return s.emit(page, func(w io.Writer) { printSequences(w, page) })
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "sequences per page, 1 to 1000 (default 100)")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "the page after the one that gave this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func listSequences(ctx context.Context, client *sundial.Client, p sundial.ListSequencesParams, all bool) (sundial.SequencePage, error) {
	if !all {
		return client.Sequences.List(ctx, p)
	}
	page := sundial.SequencePage{Data: []sundial.Sequence{}}
	for seq, err := range client.Sequences.All(ctx, p) {
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, seq)
	}
	page.Meta.TotalItems = int64(len(page.Data))
	return page, nil
}

func printSequences(w io.Writer, page sundial.SequencePage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tSCHEDULE\tNEXT RUN\tSTEPS\tID")
	for _, seq := range page.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", seq.Name, seq.Status, describeSchedule(seq.Schedule),
			formatTime(seq.NextRunAt), len(seq.Steps), seq.ID)
	}
	_ = tw.Flush()
	if page.Meta.NextCursor != "" {
		fmt.Fprintf(w, "More: --cursor %s\n", page.Meta.NextCursor)
	}
}

// formatTime is t in RFC 3339, or "-" when unset.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// describeSchedule is a schedule in a few words: "every 15m",
// "weekly mon,fri 09:00 Europe/Paris".
func describeSchedule(sc sundial.SequenceSchedule) string {
	if sc.Every != "" {
		return "every " + sc.Every
	}
	parts := []string{sc.Frequency}
	if len(sc.DaysOfWeek) > 0 {
		parts = append(parts, strings.Join(sc.DaysOfWeek, ","))
	}
	if len(sc.DaysOfMonth) > 0 {
		days := make([]string, len(sc.DaysOfMonth))
		for i, d := range sc.DaysOfMonth {
			days[i] = fmt.Sprint(d)
		}
		parts = append(parts, "days "+strings.Join(days, ","))
	}
	if t := sc.Time; t != nil {
		if t.Hour != nil {
			parts = append(parts, fmt.Sprintf("%02d:%02d", *t.Hour, t.Minute))
		} else {
			parts = append(parts, fmt.Sprintf(":%02d", t.Minute))
		}
	}
	return strings.Join(append(parts, sc.Timezone), " ")
}

func sequenceGetCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME|ID",
		Short: "Show one sequence",
		Args:  oneSequence,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withSequence(cmd, args, func(_ context.Context, _ *sundial.Client, seq sundial.Sequence) error {
				return s.emit(seq, func(w io.Writer) { printSequence(w, seq) })
			})
		},
	}
}

func printSequence(w io.Writer, seq sundial.Sequence) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("ID", seq.ID)
	row("Name", seq.Name)
	row("Status", seq.Status)
	row("Schedule", describeSchedule(seq.Schedule))
	row("Start at", formatTime(seq.StartAt))
	row("End at", formatTime(seq.EndAt))
	row("Catch up", seq.CatchUp)
	row("Overlap", seq.Overlap)
	row("Next run", formatTime(seq.NextRunAt))
	row("Last run", formatTime(seq.LastRunAt))
	for _, st := range seq.Steps {
		line := st.Path
		if len(st.DependsOn) > 0 {
			line += " after " + strings.Join(st.DependsOn, ", ")
		}
		row("Step "+st.Name, line)
	}
	_ = tw.Flush()
}

func sequenceTriggerCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "trigger NAME|ID",
		Short: "Run a sequence now, outside its schedule",
		Args:  oneSequence,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withSequence(cmd, args, func(ctx context.Context, client *sundial.Client, seq sundial.Sequence) error {
				tr, err := client.Sequences.Trigger(ctx, seq.ID)
				if err != nil {
					return err
				}
				return s.emit(tr, func(w io.Writer) {
					fmt.Fprintf(w, "Triggered %s: run %s.\n", seq.Name, tr.RunID)
				})
			})
		},
	}
}

// sequenceStateCommand is pause or resume.
func sequenceStateCommand(s *state, name, short string,
	action func(*sundial.SequenceService, context.Context, string) (sundial.Sequence, error)) *cobra.Command {
	return &cobra.Command{
		Use:   name + " NAME|ID",
		Short: short,
		Args:  oneSequence,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withSequence(cmd, args, func(ctx context.Context, client *sundial.Client, seq sundial.Sequence) error {
				got, err := action(client.Sequences, ctx, seq.ID)
				if err != nil {
					return err
				}
				return s.emit(got, func(w io.Writer) {
					fmt.Fprintf(w, "%s is %s (next run %s).\n", got.Name, got.Status, formatTime(got.NextRunAt))
				})
			})
		},
	}
}

func sequencePreviewCommand(s *state) *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "preview NAME|ID",
		Short: "Show a sequence's next run times",
		Args:  oneSequence,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 0 || count > 100 {
				return usagef("--count: %d is not from 1 to 100", count)
			}
			return s.withSequence(cmd, args, func(ctx context.Context, client *sundial.Client, seq sundial.Sequence) error {
				times, err := client.Sequences.Preview(ctx, seq.ID, count)
				if err != nil {
					return namedFields(err, map[string]string{"count": "--count"})
				}
				return s.emit(sundial.SequencePreview{RunTimes: times}, func(w io.Writer) {
					for _, t := range times {
						fmt.Fprintln(w, t.Format(time.RFC3339))
					}
				})
			})
		},
	}
	cmd.Flags().IntVar(&count, "count", 0, "how many run times, 1 to 100 (default 10)")
	return cmd
}

func sequenceRunsCommand(s *state) *cobra.Command {
	var (
		p   sundial.ListSequencesParams
		all bool
	)
	cmd := &cobra.Command{
		Use:   "runs NAME|ID",
		Short: "List a sequence's runs, newest slot first, one page (or --all)",
		Args:  oneSequence,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withSequence(cmd, args, func(ctx context.Context, client *sundial.Client, seq sundial.Sequence) error {
				page, err := listRuns(ctx, client, seq.ID, p, all)
				if err != nil {
					return namedFields(err, map[string]string{"limit": "--limit", "cursor": "--cursor"})
				}
				return s.emit(page, func(w io.Writer) { printRuns(w, page) })
			})
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "runs per page, 1 to 1000 (default 100)")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "the page after the one that gave this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func listRuns(ctx context.Context, client *sundial.Client, id string, p sundial.ListSequencesParams, all bool) (sundial.SequenceRunPage, error) {
	if !all {
		return client.Sequences.Runs(ctx, id, p)
	}
	page := sundial.SequenceRunPage{Data: []sundial.SequenceRun{}}
	for run, err := range client.Sequences.AllRuns(ctx, id, p) {
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, run)
	}
	page.Meta.TotalItems = int64(len(page.Data))
	return page, nil
}

func printRuns(w io.Writer, page sundial.SequenceRunPage) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tSTATUS\tTRIGGER\tSTEPS\tID")
	for _, r := range page.Data {
		steps := make([]string, len(r.Steps))
		for i, st := range r.Steps {
			steps[i] = st.Name + "=" + st.Status
		}
		status := r.Status
		if r.SkipReason != "" {
			status += " (" + r.SkipReason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", formatTime(r.Slot), status, r.Trigger, strings.Join(steps, " "), r.ID)
	}
	_ = tw.Flush()
	if page.Meta.NextCursor != "" {
		fmt.Fprintf(w, "More: --cursor %s\n", page.Meta.NextCursor)
	}
}
