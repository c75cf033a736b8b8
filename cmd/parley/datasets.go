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
	cmd := &cobra.Command{Use: "datasets", Short: "Inspect knowledge bases"}
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
	cmd.AddCommand(status)
	return cmd
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
