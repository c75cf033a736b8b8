package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/knowledge"
	"github.com/parleyhq/parley/internal/store"
)

func newDatasetsCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{Use: "datasets", Short: "Inspect knowledge bases; register external knowledge APIs"}
	var watch bool
	var interval time.Duration
	status := &cobra.Command{
		Use:   "status [NAME|ID]",
		Short: "Show indexing progress: documents by status and chunks indexed, with a progress bar",
		Long: "Show each knowledge base's documents by display status and, for documents being indexed,\n" +
			"how many of their chunks are indexed, as a progress bar. With --watch, refresh until\n" +
			"no document is queued or indexing.",
		Args: cobra.MaximumNArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			for {
				busy, err := printDatasetStatus(ctx, out, e.store, args)
				if err != nil || !watch || !busy {
					return err
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
				fmt.Fprintln(out)
			}
		}),
	}
	status.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until indexing is done")
	status.Flags().DurationVar(&interval, "interval", time.Second, "refresh interval with --watch")
	cmd.AddCommand(status, newExternalAPICmd(getenv, f))
	return cmd
}

// newExternalAPICmd registers the external knowledge APIs that external knowledge bases
// retrieve from (docs/external-knowledge.md).
func newExternalAPICmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "external-api",
		Short: "Register the external knowledge APIs that external knowledge bases retrieve from",
		Long: "An external knowledge API is a service that answers Dify's External Knowledge API at\n" +
			"ENDPOINT/retrieval (another Parley: its {base}/v1/external-knowledge). An external knowledge\n" +
			"base (POST /datasets with provider external) is bound to one by its id. The API key is never\n" +
			"stored: the server reads it from the environment variable the API names. Calls go through the\n" +
			"network guard: internal addresses only within PARLEY_EXTERNAL_KNOWLEDGE_ALLOWED_NETWORKS.",
	}
	var in knowledge.ExternalAPIInput
	add := &cobra.Command{
		Use:   "add NAME --endpoint URL --api-key-env VAR [--description TEXT]",
		Short: "Register an external knowledge API and print its id",
		Args:  cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			in.Name = args[0]
			a, err := knowledge.New(knowledge.Options{Store: e.store}).CreateExternalAPI(cmd.Context(), in)
			if err != nil {
				return cliError(err)
			}
			if strings.TrimSpace(getenv(a.APIKeyEnv)) == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s is not set here; set it in the server's environment to the API's key\n", a.APIKeyEnv)
			}
			fmt.Fprintln(cmd.OutOrStdout(), a.ID)
			return nil
		}),
	}
	add.Flags().StringVar(&in.Endpoint, "endpoint", "", "the API's base URL (Parley calls ENDPOINT/retrieval)")
	add.Flags().StringVar(&in.APIKeyEnv, "api-key-env", "", "the environment variable of the server that holds the API key")
	add.Flags().StringVar(&in.Description, "description", "", "free text")
	_ = add.MarkFlagRequired("endpoint")
	_ = add.MarkFlagRequired("api-key-env")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the external knowledge APIs and how many knowledge bases each is bound to",
		Args:  cobra.NoArgs,
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			apis, used, err := knowledge.New(knowledge.Options{Store: e.store}).ExternalAPIs(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tENDPOINT\tAPI KEY ENV\tKNOWLEDGE BASES\tID")
			for i, a := range apis {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", a.Name, a.Endpoint, a.APIKeyEnv, used[i], a.ID)
			}
			return tw.Flush()
		}),
	}
	remove := &cobra.Command{
		Use:   "remove NAME|ID",
		Short: "Remove an external knowledge API that no knowledge base is bound to",
		Args:  cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			return cliError(knowledge.New(knowledge.Options{Store: e.store}).DeleteExternalAPI(cmd.Context(), args[0]))
		}),
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}

// cliError is err as a command reports it: a knowledge error's own message, without the
// package's prefix.
func cliError(err error) error {
	var kerr *knowledge.Error
	if errors.As(err, &kerr) {
		return errors.New(kerr.SafeMessage())
	}
	return err
}

// printDatasetStatus prints the status of the selected datasets (all when args is empty) and
// reports whether any document is still queued or indexing.
func printDatasetStatus(ctx context.Context, out io.Writer, st *store.Store, args []string) (bool, error) {
	var datasets []store.Dataset
	if len(args) == 1 {
		d, err := st.DatasetByName(ctx, args[0])
		if errors.Is(err, store.ErrNotFound) {
			d, err = st.Dataset(ctx, args[0])
		}
		if errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("no knowledge base named or with id %q", args[0])
		}
		if err != nil {
			return false, err
		}
		datasets = append(datasets, d)
	} else {
		for page := 1; ; page++ {
			ds, _, err := st.ListDatasets(ctx, store.DatasetQuery{Page: page, Limit: 100})
			if err != nil {
				return false, err
			}
			datasets = append(datasets, ds...)
			if len(ds) < 100 {
				break
			}
		}
	}
	if len(datasets) == 0 {
		fmt.Fprintln(out, "no knowledge bases")
		return false, nil
	}
	busy := false
	for _, d := range datasets {
		var docs []store.Document
		for page := 1; ; page++ {
			ds, _, err := st.ListDocuments(ctx, store.DocumentQuery{DatasetID: d.ID, Page: page, Limit: 100})
			if err != nil {
				return false, err
			}
			docs = append(docs, ds...)
			if len(ds) < 100 {
				break
			}
		}
		counts := map[string]int{}
		var active []store.Document
		for _, doc := range docs {
			ds := knowledge.DisplayStatus(doc)
			counts[ds]++
			if ds == "queuing" || ds == "indexing" {
				active = append(active, doc)
			}
		}
		technique := d.IndexingTechnique
		if technique == "" {
			technique = "not set"
		}
		fmt.Fprintf(out, "%s (%s, %s): %d documents", d.Name, d.ID, technique, len(docs))
		for _, s := range []string{"available", "queuing", "indexing", "paused", "error", "disabled", "archived"} {
			if counts[s] > 0 {
				fmt.Fprintf(out, ", %d %s", counts[s], s)
			}
		}
		fmt.Fprintln(out)
		if len(active) == 0 {
			continue
		}
		busy = true
		ids := make([]string, len(active))
		for i, doc := range active {
			ids[i] = doc.ID
		}
		prog, err := st.IndexingProgress(ctx, ids)
		if err != nil {
			return false, err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, doc := range active {
			p := prog[doc.ID]
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", doc.Name, doc.IndexingStatus, bar(p))
		}
		if err := tw.Flush(); err != nil {
			return false, err
		}
	}
	return busy, nil
}

// bar renders chunk progress as a one-line progress bar.
func bar(p store.IndexingProgress) string {
	if p.Total == 0 {
		return "waiting for chunks"
	}
	var b strings.Builder
	pb := progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(&b), progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(), progressbar.OptionSetDescription("chunks"),
		progressbar.OptionSetRenderBlankState(false), progressbar.OptionThrottle(0))
	_ = pb.Set(p.Completed)
	return strings.TrimSpace(strings.ReplaceAll(b.String(), "\r", ""))
}
