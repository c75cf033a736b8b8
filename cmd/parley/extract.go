package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/knowledge/sandbox"
)

// extractCmdName is the hidden subcommand the server runs, as a child process of its own
// binary, to extract the text of each document under CPU and memory limits.
const extractCmdName = "extract-worker"

func newExtractCmd() *cobra.Command {
	return &cobra.Command{
		Use:    extractCmdName,
		Short:  "Extract one document's text from stdin (run by the server, not by hand)",
		Hidden: true,
		// The flags are the sandbox's own, as sandbox.Extractor passes them.
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := sandbox.Main(args, os.Stdin, os.Stdout, os.Stderr); code != 0 {
				os.Exit(code)
			}
			return nil
		},
	}
}
