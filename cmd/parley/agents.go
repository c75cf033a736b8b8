package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/apps/dsl"
)

// The Agent an Agent app (mode agent) is bound to has a draft and published versions; these
// commands edit the draft, publish it and unbind it. `parley apps publish` publishes it too.
func newAgentsCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Manage the Agent bound to an Agent app: replace its draft, publish it, archive it",
		Long: "An Agent app (mode agent) is bound to an Agent, which has a draft and numbered, immutable\n" +
			"published versions. The API runs the published version even when the draft is newer; an\n" +
			"imported Agent starts as an unpublished draft. A running server sees every change at once.",
	}
	cmd.AddCommand(newAgentsDraftCmd(getenv, f), newAgentsPublishCmd(getenv, f), newAgentsArchiveCmd(getenv, f))
	return cmd
}

func newAgentsDraftCmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		opts     dsl.Options
		datasets []string
	)
	cmd := &cobra.Command{
		Use:   "draft [--strict] [--model-fallback PROVIDER:MODEL] [--dataset ID=KB]... APP FILE",
		Short: "Replace the draft of an Agent app's agent with the agent of a DSL file",
		Long: "Read a Dify DSL export of an Agent app (mode agent) and make its agent package the draft of\n" +
			"the Agent bound to APP. References resolve as for `parley apps import`. The published\n" +
			"version, which the API runs, is unchanged until `parley agents publish APP`.",
		Args: cobra.ExactArgs(2),
		PreRunE: func(*cobra.Command, []string) error {
			opts.Datasets = map[string]string{}
			for _, d := range datasets {
				from, to, ok := strings.Cut(d, "=")
				if !ok || from == "" || to == "" {
					return fmt.Errorf("--dataset %q: want DATASET_ID=KNOWLEDGE_BASE", d)
				}
				opts.Datasets[from] = to
			}
			opts.Modes = []string{apps.ModeAgent}
			return nil
		},
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			data, err := readDSL(args[1], cmd.InOrStdin())
			if err != nil {
				return err
			}
			denv, err := dslEnv(ctx, e)
			if err != nil {
				return err
			}
			res, err := dsl.Import(data, denv, opts)
			if err != nil {
				return importErr(err, opts)
			}
			if err := e.apps.SaveAgentDraft(ctx, args[0], res.App.Bound.Draft); err != nil {
				return appErr(ctx, e, err, args[0])
			}
			for _, n := range res.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "parley: "+n.String())
			}
			e.log.Info("agent draft saved", "app", args[0])
			return nil
		}),
	}
	fl := cmd.Flags()
	toolFlags(fl, &opts)
	fl.StringVar(&opts.ModelFallback, "model-fallback", "", "PROVIDER:MODEL, a configured llm used for every model reference that does not resolve")
	fl.StringArrayVar(&datasets, "dataset", nil, "DATASET_ID=KNOWLEDGE_BASE: the knowledge base (name or id) a dataset of the file means; repeatable")
	return cmd
}

func newAgentsPublishCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "publish APP",
		Short: "Publish the draft of an Agent app's agent as its next version (as `apps publish`)",
		Args:  cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			return printPublished(cmd, e, args[0])
		}),
	}
}

func newAgentsArchiveCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "archive APP",
		Short: "Archive the agent of an Agent app: the app has no bound agent any more",
		Long: "Archive the Agent bound to APP. Its versions stay in the database, but the app has no bound\n" +
			"agent: its messages are refused (400 invalid_param) until the app is deleted and imported again.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			if err := e.apps.ArchiveAgent(cmd.Context(), args[0]); err != nil {
				return appErr(cmd.Context(), e, err, args[0])
			}
			e.log.Info("agent archived", "app", args[0])
			return nil
		}),
	}
}
