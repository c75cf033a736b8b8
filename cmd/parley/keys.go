package main

import (
	"errors"
	"fmt"
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
	create := &cobra.Command{
		Use:   "create (--app NAME | --knowledge)",
		Short: "Issue an API key and print it once on stdout",
		Long: "Issue an API key. An app key (--app NAME) reaches one app, of the config file or imported; a\n" +
			"knowledge-base key (--knowledge) reaches every knowledge base of the workspace and the\n" +
			"models listing. Only the key is printed, on stdout; it is stored as a hash and cannot be\n" +
			"shown again.",
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if (appName == "") == !knowledge {
				return errors.New("give exactly one of --app NAME or --knowledge")
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
			secret, key, err := auth.New(e.store).Create(cmd.Context(), kind, appID)
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
			fmt.Fprintln(tw, "ID\tKIND\tAPP\tPREFIX\tCREATED\tLAST USED\tREVOKED")
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Kind, app, k.Prefix+"…",
					stamp(&k.CreatedAt), stamp(k.LastUsedAt), stamp(k.RevokedAt))
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
	keys.AddCommand(create, list, revoke)
	return keys
}

func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
