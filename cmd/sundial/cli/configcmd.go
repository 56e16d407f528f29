package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

// defaultManifest is the file the config commands read and write.
const defaultManifest = "sundial.toml"

// configCommand manages the project as code. Not to be mistaken for the
// credentials file of `sundial login` (config.go): this one is
// sundial.toml, the project's settings and sequences.
func configCommand(s *state) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage the project's settings and sequences as code, in sundial.toml",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.PersistentFlags().StringVar(&file, "file", defaultManifest, "the file to read or write")
	cmd.AddCommand(configInitCommand(s, &file), configValidateCommand(s, &file), configDiffCommand(s, &file),
		configApplyCommand(s, &file), configPullCommand(s, &file))
	return cmd
}

func configInitCommand(s *state, file *string) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented starter sundial.toml for the key's project (one without sequences yet)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseOverwrite(*file, force); err != nil {
				return err
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			project, err := client.Project.Get(cmd.Context())
			if err != nil {
				return err
			}
			// The starter has no sequence: applied, it would delete the
			// project's.
			some, err := client.Sequences.List(cmd.Context(), sundial.ListSequencesParams{Limit: 1})
			if err != nil {
				return err
			}
			if len(some.Data) > 0 {
				return fmt.Errorf("project %s has sequences, which a starter file would delete when applied: run `sundial config pull` to start from them", project.Name)
			}
			text := fmt.Sprintf(starterManifest, project.Name, tomlValue(project.ID), tomlValue(project.Domain))
			if err := writeManifest(*file, []byte(text)); err != nil {
				return err
			}
			return s.emit(struct {
				File      string `json:"file"`
				ProjectID string `json:"projectId"`
			}{*file, project.ID}, func(w io.Writer) {
				fmt.Fprintf(w, "Wrote %s for project %s (%s).\n", *file, project.Name, project.ID)
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the file if it exists")
	return cmd
}

// starterManifest is init's file: the project, and an example sequence
// left commented out, so that applying the starter changes nothing.
const starterManifest = `# sundial.toml: project %s as code. Reference: docs/cli.md.
#   sundial config validate   check this file
#   sundial config diff       compare it with the live project (exit 1 on changes)
#   sundial config apply      make the live project this file (--dry-run, --yes)
#   sundial config pull       write the live project into this file
# Secrets (the authorization header, API keys) never go here.

# The id of the project this file describes: a key of another project is refused.
project = %s
# Deliveries go to https://<domain><step path>. Left out: left as it is.
domain = %s
# What an ordering key does when one of its hooks fails for good: "continue" with
# its next hook (the default), or "hold" until ` + "`sundial ordering-keys resume`" + `.
# Left out: left as it is.
# ordering_on_failure = "hold"

# The project's retry policy. Left out (or a key of it): left as it is.
# [retry]
# min_retries = 3
# delay_secs = 30
# strategy = "exponential"   # or "fixed"
# backoff_factor = 2.0
# max_delay_secs = 600
# jitter = true

# Every sequence of the project: one live but not here is deleted by apply.
# [[sequences]]
# name = "nightly-etl"
# catch_up = "latest"        # latest, all or none
# overlap = "skip"           # allow or skip
#
# [sequences.schedule]
# frequency = "weekly"       # hourly, daily, weekly or monthly; or every = "15m" alone
# timezone = "Europe/Paris"
# time = { hour = 9, minute = 0 }
# days_of_week = ["mon", "tue", "wed", "thu", "fri"]
#
# [sequences.steps.extract]
# path = "/etl/extract"
# data = { source = "crm" }
#
# [sequences.steps.transform]
# path = "/etl/transform"
# depends_on = ["extract"]
#
# [sequences.steps.load]
# path = "/etl/load"
# depends_on = ["transform"]
# retry_override = { min_retries = 5, delay_secs = 30, strategy = "fixed" }
`

func configValidateCommand(s *state, file *string) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the file's keys and structure (the API checks the values: see diff and apply --dry-run)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			m, err := readManifest(*file)
			if err != nil {
				return err
			}
			return s.emit(struct {
				File      string `json:"file"`
				Valid     bool   `json:"valid"`
				Sequences int    `json:"sequences"`
			}{*file, true, len(m.Sequences)}, func(w io.Writer) {
				fmt.Fprintf(w, "%s is valid: %d sequence(s).\n", *file, len(m.Sequences))
			})
		},
	}
}

// loadPlan reads the file, checks that it is the key's project's, and
// compares it with the live state.
func (s *state) loadPlan(ctx context.Context, file string) (plan, *sundial.Client, manifest, error) {
	m, err := readManifest(file)
	if err != nil {
		return plan{}, nil, m, err
	}
	client, err := s.apiClient()
	if err != nil {
		return plan{}, nil, m, err
	}
	project, err := client.Project.Get(ctx)
	if err != nil {
		return plan{}, nil, m, err
	}
	if m.Project != project.ID {
		return plan{}, nil, m, fmt.Errorf("project: %s is for project %q, but the API key is project %s's (%s): nothing changed",
			file, m.Project, project.Name, project.ID)
	}
	live, err := allSequences(ctx, client)
	if err != nil {
		return plan{}, nil, m, err
	}
	p := buildPlan(m, project, live)
	if err := checkSchedules(ctx, client, m, p); err != nil {
		return p, nil, m, err
	}
	return p, client, m, nil
}

// checkSchedules has the API check each schedule the plan would send, by
// previewing it (nothing is saved): what the file cannot check itself (a
// zone, an hour, the bounds) is refused before any change, naming the
// file's keys.
func checkSchedules(ctx context.Context, client *sundial.Client, m manifest, p plan) error {
	index := manifestIndex(m)
	var bad []string
	for _, c := range p.Changes {
		if c.Kind != "sequence" || c.Op == opDelete {
			continue
		}
		req := sundial.SchedulePreviewRequest{Schedule: c.request.Schedule, StartAt: c.request.StartAt,
			EndAt: c.request.EndAt, Count: 1}
		if req.StartAt.IsZero() && req.Schedule.Every != "" {
			req.StartAt = time.Now() // every needs an anchor: a create's is its creation time
		}
		_, err := client.Sequences.PreviewSchedule(ctx, req)
		var apiErr *sundial.APIError
		switch {
		case err == nil:
		case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest && len(apiErr.Details) > 0:
			bad = append(bad, namedProblems(apiErr, fmt.Sprintf("sequences[%d].", index[c.Name]), nil)...)
		default:
			return err
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the API refuses the file's schedules, nothing changed:\n  %s", strings.Join(bad, "\n  "))
	}
	return nil
}

func manifestIndex(m manifest) map[string]int {
	index := map[string]int{}
	for i, seq := range m.Sequences {
		index[seq.Name] = i
	}
	return index
}

func allSequences(ctx context.Context, client *sundial.Client) ([]sundial.Sequence, error) {
	var out []sundial.Sequence
	for seq, err := range client.Sequences.All(ctx, sundial.ListSequencesParams{Limit: 1000}) {
		if err != nil {
			return nil, err
		}
		out = append(out, seq)
	}
	return out, nil
}

// planResult is a plan's JSON: its changes, and whether apply made them.
type planResult struct {
	File    string   `json:"file"`
	Changes []change `json:"changes"`
	Applied bool     `json:"applied"`
}

func configDiffCommand(s *state, file *string) *cobra.Command {
	return &cobra.Command{
		Use:   "diff",
		Short: "Compare the file with the live project: exit 0 when they agree, 1 when there are changes",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, _, _, err := s.loadPlan(cmd.Context(), *file)
			if err != nil {
				return err
			}
			if err := s.emit(planResult{File: *file, Changes: nonNil(p.Changes)}, p.print); err != nil {
				return err
			}
			if len(p.Changes) > 0 {
				return exitCode(ExitError)
			}
			return nil
		},
	}
}

func nonNil(cs []change) []change {
	if cs == nil {
		return []change{}
	}
	return cs
}

func configApplyCommand(s *state, file *string) *cobra.Command {
	var dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Make the live project the file's: show the plan, then create, change and delete",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, client, m, err := s.loadPlan(cmd.Context(), *file)
			if err != nil {
				return err
			}
			res := planResult{File: *file, Changes: nonNil(p.Changes)}
			if !s.json() {
				p.print(s.env.Stdout)
			}
			if dryRun || len(p.Changes) == 0 {
				return s.emit(res, func(w io.Writer) {
					if len(p.Changes) > 0 {
						fmt.Fprintln(w, "Dry run: nothing changed.")
					}
				})
			}
			if err := s.confirmDeletes(p, yes); err != nil {
				return err
			}
			if err := applyPlan(cmd.Context(), client, m, p); err != nil {
				return err
			}
			res.Applied = true
			return s.emit(res, func(w io.Writer) { fmt.Fprintln(w, "Applied.") })
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the plan and change nothing")
	cmd.Flags().BoolVar(&yes, "yes", false, "delete the sequences the file lacks without asking")
	return cmd
}

// confirmDeletes asks before deleting, on a terminal; without one, only
// --yes deletes. Refused, nothing is applied.
func (s *state) confirmDeletes(p plan, yes bool) error {
	dels := p.deletes()
	if len(dels) == 0 || yes {
		return nil
	}
	names := make([]string, len(dels))
	for i, c := range dels {
		names[i] = c.Name
	}
	list := strings.Join(names, ", ")
	if !s.env.Terminal {
		return fmt.Errorf("--yes: the plan deletes %d sequence(s) (%s) and there is no terminal to ask on: give --yes; nothing changed", len(dels), list)
	}
	fmt.Fprintf(s.env.Stderr, "Delete %d sequence(s) (%s) with their runs? [y/N] ", len(dels), list)
	answer, _ := bufio.NewReader(s.env.Stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("not confirmed: nothing changed")
	}
	return nil
}

// applyPlan makes the changes: the project first (a new domain is where
// the sequences deliver), then creates, updates and deletes. It stops at
// the first failure, naming the sequence and the file's key.
func applyPlan(ctx context.Context, client *sundial.Client, m manifest, p plan) error {
	index := manifestIndex(m)
	for _, c := range p.Changes {
		var err error
		switch {
		case c.Kind == "project":
			_, err = client.Project.Update(ctx, c.patch)
			err = fileKeys(err, "", nil)
		case c.Op == opCreate:
			_, err = client.Sequences.Create(ctx, c.request)
		case c.Op == opUpdate:
			_, err = client.Sequences.Replace(ctx, c.ID, c.request)
		case c.Op == opDelete:
			err = client.Sequences.Delete(ctx, c.ID)
		}
		if err != nil && c.Kind == "sequence" {
			err = fileKeys(err, fmt.Sprintf("sequences[%d].", index[c.Name]), c.request.Steps)
			return fmt.Errorf("%s sequence %q: %w", c.Op, c.Name, err)
		}
		if err != nil {
			return fmt.Errorf("update project: %w", err)
		}
	}
	return nil
}

var stepIndex = regexp.MustCompile(`^steps\[(\d+)\]`)

// fileKeys puts the file's key before each field the API refused:
// steps[2].retryOverride.delaySecs is sequences[0].steps.load.retry_override.delay_secs.
func fileKeys(err error, prefix string, steps []sundial.SequenceStep) error {
	var apiErr *sundial.APIError
	if err == nil || !errors.As(err, &apiErr) || len(apiErr.Details) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(namedProblems(apiErr, prefix, steps), "; "), err)
}

// namedProblems are the API's problems, each after the file's key.
func namedProblems(apiErr *sundial.APIError, prefix string, steps []sundial.SequenceStep) []string {
	var named []string
	for _, d := range apiErr.Details {
		field := d.Field
		if mt := stepIndex.FindStringSubmatch(field); mt != nil {
			if i, err := strconv.Atoi(mt[1]); err == nil && i < len(steps) {
				field = "steps." + steps[i].Name + field[len(mt[0]):]
			}
		}
		if field == "retryPolicy" || strings.HasPrefix(field, "retryPolicy.") {
			field = "retry" + strings.TrimPrefix(field, "retryPolicy")
		}
		named = append(named, prefix+snake(field)+": "+d.Message)
	}
	return named
}

// snake is the API's camelCase field in the file's snake_case.
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func configPullCommand(s *state, file *string) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "pull",
		Short: "Write the live project and its sequences into the file (no secrets)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseOverwrite(*file, force); err != nil {
				return err
			}
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			project, err := client.Project.Get(cmd.Context())
			if err != nil {
				return err
			}
			live, err := allSequences(cmd.Context(), client)
			if err != nil {
				return err
			}
			// The listing is newest first; the file reads oldest first.
			for i, j := 0, len(live)-1; i < j; i, j = i+1, j-1 {
				live[i], live[j] = live[j], live[i]
			}
			header := fmt.Sprintf("# sundial.toml: project %s as code, pulled from the live project. Reference: docs/cli.md.\n\n", project.Name)
			if err := writeManifest(*file, liveManifest(project, live).encode(header)); err != nil {
				return err
			}
			return s.emit(struct {
				File      string `json:"file"`
				ProjectID string `json:"projectId"`
				Sequences int    `json:"sequences"`
			}{*file, project.ID, len(live)}, func(w io.Writer) {
				fmt.Fprintf(w, "Wrote %s: project %s, %d sequence(s).\n", *file, project.Name, len(live))
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the file if it exists")
	return cmd
}

// refuseOverwrite keeps an existing file (it may hold edits not applied)
// unless --force.
func refuseOverwrite(path string, force bool) error {
	if force {
		return nil
	}
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return fmt.Errorf("--force: %s exists; give --force to overwrite it", path)
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return fmt.Errorf("%s: %w", path, err)
	}
}

func writeManifest(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
