package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/store"
)

func newKeysCmd(getenv func(string) string, f *flags) *cobra.Command {
	keys := &cobra.Command{Use: "keys", Short: "Manage API keys"}

	var appName string
	var knowledge bool
	var expiresIn string
	var limits store.Limits
	create := &cobra.Command{
		Use:   "create (--app NAME | --knowledge) [--expires-in 30d] [--requests-per-minute N] [--tokens-per-day N] [--workflow-runs-per-day N]",
		Short: "Issue an API key and print it once on stdout",
		Long: "Issue an API key. An app key (--app NAME) reaches one app, of the config file or imported; a\n" +
			"knowledge-base key (--knowledge) reaches every knowledge base of the workspace and the\n" +
			"models listing. Only the key is printed, on stdout; it is stored as a hash and cannot be\n" +
			"shown again. --expires-in makes the key stop working after a while (30d, 12h); the limits\n" +
			"hold whatever the app's own are (docs/limits.md).",
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if (appName == "") == !knowledge {
				return errors.New("give exactly one of --app NAME or --knowledge")
			}
			if limits.RequestsPerMinute < 0 || limits.TokensPerDay < 0 || limits.WorkflowRunsPerDay < 0 {
				return errors.New("a limit must not be negative (0 is no limit)")
			}
			return nil
		},
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			kind, appID := auth.KindKnowledge, ""
			if appName != "" {
				app, err := e.apps.ByName(cmd.Context(), appName)
				if err != nil {
					return appErr(cmd.Context(), e, err, appName)
				}
				kind, appID = auth.KindApp, app.ID
			}
			set := auth.Settings{Limits: limits}
			if expiresIn != "" {
				d, err := parseLifetime(expiresIn)
				if err != nil {
					return fmt.Errorf("--expires-in: %w", err)
				}
				set.ExpiresIn = d
			}
			secret, key, err := auth.New(e.store).CreateWith(cmd.Context(), kind, appID, set)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			e.log.Info("key created", "id", key.ID, "kind", string(kind), "app", appName)
			return nil
		}),
	}
	create.Flags().StringVar(&appName, "app", "", "name of the app the key is for")
	create.Flags().BoolVar(&knowledge, "knowledge", false, "issue a knowledge-base key")
	create.Flags().StringVar(&expiresIn, "expires-in", "", "how long the key works: 30d, 12h, 90m (default: until revoked)")
	limitFlags(create, &limits)
	create.Flags().Int64Var(&limits.RequestsPerMinute, "rate-limit", 0, "the same as --requests-per-minute")

	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys (ids and prefixes, never secrets)",
		Args:  cobra.NoArgs,
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			keys, err := auth.New(e.store).List(cmd.Context())
			if err != nil {
				return err
			}
			apps := map[string]string{}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tAPP\tPREFIX\tCREATED\tLAST USED\tEXPIRES\tREVOKED\tLIMITS")
			for _, k := range keys {
				app := "-"
				if k.AppID != "" {
					if _, ok := apps[k.AppID]; !ok {
						a, err := e.store.AppByID(cmd.Context(), k.AppID)
						if err != nil && !errors.Is(err, store.ErrNotFound) {
							return err
						}
						apps[k.AppID] = a.Name
					}
					app = apps[k.AppID]
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Kind, app, k.Prefix+"…",
					stamp(&k.CreatedAt), stamp(k.LastUsedAt), stamp(k.ExpiresAt), stamp(k.RevokedAt), limitsText(k.Limits))
			}
			return tw.Flush()
		}),
	}

	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key; it stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			if err := auth.New(e.store).Revoke(cmd.Context(), args[0]); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no active key with id %s", args[0])
				}
				return err
			}
			e.log.Info("key revoked", "id", args[0])
			return nil
		}),
	}
	var grace time.Duration
	rotate := &cobra.Command{
		Use:   "rotate ID [--grace 24h]",
		Short: "Issue a key in place of another and print it once on stdout; the old one works for the grace period",
		Long: "Issue a new key in place of the key ID, with its kind, app, limits and what is left of its\n" +
			"lifetime, and print it on stdout. The old key keeps working for --grace (default 0: it\n" +
			"stops at once), so that clients can move to the new one.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			secret, key, err := auth.New(e.store).Rotate(cmd.Context(), args[0], grace)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no working key with id %s", args[0])
				}
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), secret)
			e.log.Info("key rotated", "old", args[0], "new", key.ID, "grace", grace.String())
			return nil
		}),
	}
	rotate.Flags().DurationVar(&grace, "grace", 0, "how long the old key keeps working (e.g. 24h)")
	keys.AddCommand(create, list, revoke, rotate)
	return keys
}

// limitFlags adds the flags of rate limits to cmd.
func limitFlags(cmd *cobra.Command, l *store.Limits) {
	cmd.Flags().Int64Var(&l.RequestsPerMinute, "requests-per-minute", 0, "requests per minute (0: no limit)")
	cmd.Flags().Int64Var(&l.TokensPerDay, "tokens-per-day", 0, "model tokens per UTC day (0: no limit)")
	cmd.Flags().Int64Var(&l.WorkflowRunsPerDay, "workflow-runs-per-day", 0, "Chatflow and Workflow runs per UTC day (0: no limit)")
}

// limitsText shows limits for a listing: "60/min, 100000 tokens/day, 50 runs/day", or "-".
func limitsText(l store.Limits) string {
	var parts []string
	if l.RequestsPerMinute > 0 {
		parts = append(parts, fmt.Sprintf("%d/min", l.RequestsPerMinute))
	}
	if l.TokensPerDay > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens/day", l.TokensPerDay))
	}
	if l.WorkflowRunsPerDay > 0 {
		parts = append(parts, fmt.Sprintf("%d runs/day", l.WorkflowRunsPerDay))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// parseLifetime reads a lifetime: a number of days ("30d"), or a Go duration ("12h", "90m").
func parseLifetime(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a lifetime such as 30d, 12h or 90m", s)
	}
	return d, nil
}

func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
