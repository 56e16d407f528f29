package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

func orderingKeysCommand(s *state) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ordering-keys",
		Short: "Show ordering keys, list the held ones, and resume a held key",
		Long: "Hooks scheduled with the same --ordering-key are delivered one at a time, in order of postAt.\n" +
			"When one fails for good in a project whose orderingOnFailure is hold (sundial.toml's\n" +
			"ordering_on_failure), its key is held: its next hooks wait until `ordering-keys resume`.",
		// As for hooks: a typo must exit 2, not show the help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(orderingKeyGetCommand(s), orderingKeyHeldCommand(s), orderingKeyResumeCommand(s))
	return cmd
}

// oneOrderingKey wants one key.
func oneOrderingKey(cmd *cobra.Command, args []string) error {
	if len(args) != 1 || args[0] == "" {
		return usageOf(cmd, "give one ordering key")
	}
	return nil
}

func orderingKeyGetCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Show an ordering key: the hook it is on, whether it is held, and its unfinished hooks",
		Args:  oneOrderingKey,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withOrderingKey(cmd, args[0], (*sundial.OrderingKeyService).Get)
		},
	}
}

func orderingKeyResumeCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "resume KEY",
		Short: "Resume a held ordering key: its next hook is due at once (the failed hook stays failed)",
		Args:  oneOrderingKey,
		RunE: func(cmd *cobra.Command, args []string) error {
			return s.withOrderingKey(cmd, args[0], (*sundial.OrderingKeyService).Resume)
		},
	}
}

// withOrderingKey calls op on the key and shows the key it returns.
func (s *state) withOrderingKey(cmd *cobra.Command, key string,
	op func(*sundial.OrderingKeyService, context.Context, string) (sundial.OrderingKey, error)) error {
	client, err := s.apiClient()
	if err != nil {
		return err
	}
	k, err := op(client.OrderingKeys, cmd.Context(), key)
	if err != nil {
		return fmt.Errorf("ordering key %q: %w", key, err)
	}
	return s.emit(k, func(w io.Writer) { printOrderingKey(w, k) })
}

func printOrderingKey(w io.Writer, k sundial.OrderingKey) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Key:\t%s\n", k.Key)
	fmt.Fprintf(tw, "State:\t%s\n", orderingKeyState(k))
	if k.HeadHookID != nil {
		fmt.Fprintf(tw, "Head hook:\t%s\n", *k.HeadHookID)
	}
	fmt.Fprintf(tw, "Unfinished:\t%d\n", k.Unfinished)
	_ = tw.Flush()
}

// orderingKeyState is the key's state in a word or two.
func orderingKeyState(k sundial.OrderingKey) string {
	switch {
	case k.Held:
		return "held (resume it with `sundial ordering-keys resume`)"
	case k.HeadHookID != nil:
		return "busy"
	}
	return "free"
}

func orderingKeyHeldCommand(s *state) *cobra.Command {
	var (
		p   sundial.ListOrderingKeysParams
		all bool
	)
	cmd := &cobra.Command{
		Use:   "held",
		Short: "List the project's held ordering keys, one page (or --all)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := s.apiClient()
			if err != nil {
				return err
			}
			page, err := listHeld(cmd.Context(), client, p, all)
			if err != nil {
				return namedFields(err, map[string]string{"limit": "--limit", "cursor": "--cursor"})
			}
			return s.emit(page, func(w io.Writer) { printHeld(w, page) })
		},
	}
	cmd.Flags().IntVar(&p.Limit, "limit", 0, "keys per page, 1 to 1000 (default 100)")
	cmd.Flags().StringVar(&p.Cursor, "cursor", "", "the page after the one that gave this cursor")
	cmd.Flags().BoolVar(&all, "all", false, "follow the cursor to the last page")
	return cmd
}

func listHeld(ctx context.Context, client *sundial.Client, p sundial.ListOrderingKeysParams, all bool) (sundial.OrderingKeyPage, error) {
	if !all {
		return client.OrderingKeys.ListHeld(ctx, p)
	}
	page := sundial.OrderingKeyPage{Data: []sundial.OrderingKey{}}
	for k, err := range client.OrderingKeys.AllHeld(ctx, p) {
		if err != nil {
			return page, err
		}
		page.Data = append(page.Data, k)
	}
	page.Meta.TotalItems = int64(len(page.Data))
	return page, nil
}

func printHeld(w io.Writer, page sundial.OrderingKeyPage) {
	if len(page.Data) == 0 {
		fmt.Fprintln(w, "No ordering key is held.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tFAILED HOOK\tUNFINISHED")
	for _, k := range page.Data {
		head := ""
		if k.HeadHookID != nil {
			head = *k.HeadHookID
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", printable(k.Key), head, k.Unfinished)
	}
	_ = tw.Flush()
	if page.Meta.NextCursor != "" {
		fmt.Fprintf(w, "More: --cursor %s\n", page.Meta.NextCursor)
	}
}

// printable is a key as a table shows it: quoted when it holds a space or
// a tab, which would blur the columns.
func printable(key string) string {
	if strings.ContainsAny(key, " \t") {
		return fmt.Sprintf("%q", key)
	}
	return key
}
