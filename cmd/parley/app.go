package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/logctx"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/version"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary (as GET / reports it in server_version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.String())
			return err
		},
	}
}

// flags are the settings a command line may override.
type flags struct {
	addr, dataDir, configPath, databaseURL string
}

func newRootCmd(getenv func(string) string) *cobra.Command {
	var f flags
	root := &cobra.Command{
		Use:           "parley",
		Short:         "Parley: a self-hostable LLM application server with the Dify Service API",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `parley version` prints, and GET / reports as server_version.
		Version: version.String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&f.dataDir, "data-dir", "", "data directory (overrides PARLEY_DATA_DIR)")
	pf.StringVar(&f.configPath, "config", "", "YAML config file (overrides PARLEY_CONFIG)")
	pf.StringVar(&f.databaseURL, "database-url", "", "postgres:// URL; empty means SQLite in the data dir (overrides PARLEY_DATABASE_URL)")
	root.AddCommand(newServeCmd(getenv, &f), newMigrateCmd(getenv, &f), newKeysCmd(getenv, &f), newAppsCmd(getenv, &f), newAgentsCmd(getenv, &f), newConversationsCmd(getenv, &f), newDatasetsCmd(getenv, &f), newExtractCmd(), newCodeWorkerCmd(),
		newToolsCmd(getenv, &f), newFilesCmd(getenv, &f), newVersionCmd())
	return root
}

// env is what every command starts from: settings, the config file, a logger and the store.
type env struct {
	cfg   *config.Config
	file  *config.File
	log   *slog.Logger
	store *store.Store
	// appIDs maps the config's app names to their ids in the store.
	appIDs map[string]string
	// apps finds and manages the apps of both sources.
	apps *apps.Registry
	// nameClashes are config apps whose name belongs to an imported app: they have no id, and
	// the server refuses to start until one of the two is renamed.
	nameClashes []string
}

// loadSettings reads the environment and the config file, with flags on top.
func loadSettings(getenv func(string) string, f *flags, logOut io.Writer) (*config.Config, *config.File, *slog.Logger, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	if f.addr != "" {
		cfg.Addr = f.addr
	}
	if f.dataDir != "" {
		cfg.DataDir = f.dataDir
	}
	if f.configPath != "" {
		cfg.ConfigPath = f.configPath
	}
	if f.databaseURL != "" {
		cfg.DatabaseURL = f.databaseURL
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	file, err := config.LoadFile(cfg.ConfigPath, getenv) // "" is the embedded sample
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, file, newLogger(cfg, logOut), nil
}

// newLogger is the process's logger. A line logged with a request's context carries the
// request's id, whatever package logs it (internal/logctx).
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == config.LogFormatJSON {
		return slog.New(logctx.NewHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(logctx.NewHandler(slog.NewTextHandler(w, opts)))
}

// open loads the settings, opens and migrates the store, and brings the apps of the config
// file into it, so ids are stable and keys can name them. A config app whose name belongs to an
// imported app is left out and reported (env.nameClashes), so that the apps commands still work
// to sort it out.
func open(ctx context.Context, getenv func(string) string, f *flags) (*env, error) {
	cfg, file, log, err := loadSettings(getenv, f, os.Stderr)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir, store.WithSQLiteSynchronous(cfg.SQLiteSynchronous))
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	specs := make([]store.AppSpec, 0, len(file.Apps))
	for _, a := range file.Apps {
		specs = append(specs, store.AppSpec{Name: a.Name, Mode: a.Mode})
	}
	synced, err := st.SyncApps(ctx, specs)
	if err != nil {
		st.Close()
		return nil, err
	}
	ids := make(map[string]string, len(synced))
	for name, a := range synced {
		ids[name] = a.ID
	}
	var clashes []string
	declared := make([]config.App, 0, len(file.Apps))
	for _, a := range file.Apps {
		if _, ok := ids[a.Name]; !ok {
			clashes = append(clashes, a.Name)
			log.Warn("a config app has the name of an imported app; rename one of them", "app", a.Name)
			continue
		}
		declared = append(declared, a)
	}
	reg, err := apps.NewRegistry(declared, ids, cfg.MaxActiveRequests)
	if err != nil {
		st.Close()
		return nil, err
	}
	reg.WithStore(st)
	return &env{cfg: cfg, file: file, log: log, store: st, appIDs: ids, apps: reg, nameClashes: clashes}, nil
}

// withEnv adapts fn to a cobra RunE that opens the environment first and closes it after.
func withEnv(getenv func(string) string, f *flags, fn func(cmd *cobra.Command, args []string, e *env) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		e, err := open(cmd.Context(), getenv, f)
		if err != nil {
			return err
		}
		defer e.store.Close()
		return fn(cmd, args, e)
	}
}

func newMigrateCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations",
		Args:  cobra.NoArgs,
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			v, err := e.store.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			e.log.Info("database is up to date", "dialect", e.store.Dialect(), "schema_version", v)
			return nil
		}),
	}
}
