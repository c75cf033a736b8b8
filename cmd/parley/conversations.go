package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/store"
)

func newConversationsCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{Use: "conversations", Short: "Administer conversations"}
	var appName string
	end := &cobra.Command{
		Use:   "end --app NAME CONVERSATION_ID",
		Short: "End a conversation: new messages to it are refused with conversation_completed",
		Long: "End a conversation. Its history stays readable, but sending a message to it answers\n" +
			"400 conversation_completed, and the end user has to start a new conversation.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			id, ok := e.appIDs[appName]
			if !ok {
				return fmt.Errorf("no app named %q in the config file", appName)
			}
			err := e.store.SetConversationStatus(cmd.Context(), id, args[0], store.ConversationStatusEnded)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("app %s has no conversation %s", appName, args[0])
			}
			if err != nil {
				return err
			}
			e.log.Info("conversation ended", "app", appName, "conversation_id", args[0])
			return nil
		}),
	}
	end.Flags().StringVar(&appName, "app", "", "name of the app the conversation belongs to")
	_ = end.MarkFlagRequired("app")
	cmd.AddCommand(end)
	return cmd
}
