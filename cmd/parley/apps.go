package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parleyhq/parley/internal/agent"
	"github.com/parleyhq/parley/internal/workflow/nodes"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/apps/dsl"
	"github.com/parleyhq/parley/internal/mcpserver"
	"github.com/parleyhq/parley/internal/sites"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/triggers"
)

func newAppsCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apps",
		Short: "Manage apps: import and export Dify DSL files, list, publish, delete, publish as MCP servers, triggers",
		Long: "Apps come from the config file and from imports of Dify DSL files. Imported apps live in\n" +
			"the database; a running server serves an import, publish or delete at once.",
	}
	cmd.AddCommand(newAppsImportCmd(getenv, f), newAppsListCmd(getenv, f), newAppsExportCmd(getenv, f),
		newAppsPublishCmd(getenv, f), newAppsDeleteCmd(getenv, f), newAppsMCPCmd(getenv, f), newAppsLimitsCmd(getenv, f),
		newAppsSiteCmd(getenv, f),
		newAppsTriggersCmd(getenv, f))
	return cmd
}

func newAppsImportCmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		opts     dsl.Options
		publish  bool
		datasets []string
	)
	cmd := &cobra.Command{
		Use:   "import [--name NAME] [--publish] [--strict] [--model-fallback PROVIDER:MODEL] [--dataset ID=KB]... FILE",
		Short: "Import a Dify DSL file as an app and print its name",
		Long: "Import a Dify DSL export (versions " + dsl.MinVersion + " to " + dsl.MaxVersion + "; Chatbot, Completion, Legacy Agent,\n" +
			"Agent apps, an Agent's agent starting as an unpublished draft, and Chatflow and Workflow\n" +
			"apps whose nodes Parley runs; Agent, Chatflow and Workflow apps run once published, so\n" +
			"import them with --publish or run `parley apps publish NAME` after) and\n" +
			"print the app's name on stdout; notes (substitutions, settings kept but not run, datasets\n" +
			"not mapped, tools missing) go to stderr. Every model the file names must resolve on this\n" +
			"server, or the import fails listing every problem and stores nothing. FILE - reads stdin.\n" +
			"A tool this server does not have is imported marked missing, as Dify imports a file whose\n" +
			"plugins are not installed (calling it fails at run time); --strict refuses it instead.\n\n" +
			"Models: a provider reference matches a configured provider by name, then by the last\n" +
			"segment of a plugin id (langgenius/openai/openai finds openai), then by type.\n" +
			"Datasets: Dify's dataset ids mean nothing here; map each to a knowledge base with\n" +
			"--dataset ID=NAME (a file exported by Parley names its knowledge bases and needs none).\n" +
			"A dataset left unmapped is imported as Dify imports it: retrieval leaves it out, and\n" +
			"`parley apps list` and `parley apps export` show it until an import maps it.",
		Args: cobra.ExactArgs(1),
		PreRunE: func(*cobra.Command, []string) error {
			opts.Datasets = map[string]string{}
			for _, d := range datasets {
				from, to, ok := strings.Cut(d, "=")
				if !ok || from == "" || to == "" {
					return fmt.Errorf("--dataset %q: want DATASET_ID=KNOWLEDGE_BASE", d)
				}
				if _, dup := opts.Datasets[from]; dup {
					return fmt.Errorf("--dataset: %q is mapped twice", from)
				}
				opts.Datasets[from] = to
			}
			return nil
		},
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			data, err := readDSL(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			denv, err := dslEnv(ctx, e)
			if err != nil {
				return err
			}
			opts.NodeTypes = nodes.Registry(nodes.Deps{}).Supports
			res, err := dsl.Import(data, denv, opts)
			if err != nil {
				return importErr(err, opts)
			}
			a, err := e.apps.Create(ctx, res.App)
			if err != nil {
				return err
			}
			// Its web page is there at once, with the file's `site` section if it has one.
			if siteSvc, err := sites.New(ctx, e.store, e.apps); err != nil {
				return err
			} else if _, err := siteSvc.Ensure(ctx, a); err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			for _, n := range res.Notes {
				fmt.Fprintln(stderr, "parley: "+n.String())
			}
			switch {
			case publish:
				// The import prints the app's name; what publishing did goes with the notes.
				if _, err := publishApp(ctx, e, a.Name, stderr); err != nil {
					return err
				}
			case a.Versioned():
				fmt.Fprintf(stderr, "parley: %q is not published: it refuses runs until it is (parley apps publish %s)\n",
					a.Name, shellQuote(a.Name))
			}
			e.log.Info("app imported", "app", a.Name, "id", a.ID, "mode", a.Mode, "dsl_version", a.DSLVersion)
			fmt.Fprintln(cmd.OutOrStdout(), a.Name)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "name of the app (default: the file's app.name)")
	fl.BoolVar(&publish, "publish", false, "publish the app once imported (for the kinds that have versions)")
	toolFlags(fl, &opts)
	fl.StringVar(&opts.ModelFallback, "model-fallback", "", "PROVIDER:MODEL, a configured llm used for every model reference that does not resolve")
	fl.StringArrayVar(&datasets, "dataset", nil, "DATASET_ID=KNOWLEDGE_BASE: the knowledge base (name or id) a dataset of the file means; repeatable")
	return cmd
}

// toolFlags adds --strict, and --lenient for the scripts written when it was needed, to an
// import's flags. Tools this server does not have are imported, marked missing, with a note, as
// Dify imports a file whose tool plugins are not installed; --strict refuses them instead.
func toolFlags(fl *pflag.FlagSet, opts *dsl.Options) {
	opts.Lenient = true
	fl.Var(strictFlag{opts}, "strict", "refuse a file whose tools this server does not have (by default they are imported, marked missing, with a note)")
	fl.Lookup("strict").NoOptDefVal = "true"
	fl.BoolVar(&opts.Lenient, "lenient", true, "import tools this server does not have (the default; kept for scripts)")
	_ = fl.MarkHidden("lenient")
}

// strictFlag is --strict: the opposite of dsl.Options.Lenient.
type strictFlag struct{ opts *dsl.Options }

func (f strictFlag) String() string {
	if f.opts == nil {
		return "false"
	}
	return strconv.FormatBool(!f.opts.Lenient)
}

func (f strictFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	f.opts.Lenient = !v
	return nil
}

func (strictFlag) Type() string { return "bool" }

// readDSL reads the file to import (stdin for "-"), no more than one byte past the size limit.
func readDSL(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, dsl.MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// dslEnv is what an import resolves against: the config file's providers and the knowledge
// bases that exist or that the config file declares (the server creates those when it starts).
func dslEnv(ctx context.Context, e *env) (dsl.Env, error) {
	reg, err := toolRegistry(e, nil)
	if err != nil {
		return dsl.Env{}, err
	}
	denv := dsl.Env{Providers: e.file.Providers, Tool: agent.Available(ctx, reg.Find)}
	for page := 1; ; page++ {
		ds, _, err := e.store.ListDatasets(ctx, store.DatasetQuery{Page: page, Limit: 100})
		if err != nil {
			return dsl.Env{}, err
		}
		for _, d := range ds {
			denv.KnowledgeBases = append(denv.KnowledgeBases, dsl.KnowledgeBase{ID: d.ID, Name: d.Name})
		}
		if len(ds) < 100 {
			break
		}
	}
	for _, kb := range e.file.KnowledgeBases {
		if !slices.ContainsFunc(denv.KnowledgeBases, func(k dsl.KnowledgeBase) bool { return k.Name == kb.Name }) {
			denv.KnowledgeBases = append(denv.KnowledgeBases, dsl.KnowledgeBase{Name: kb.Name})
		}
	}
	return denv, nil
}

func newAppsListCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the apps served: config apps, then imported ones",
		Args:  cobra.NoArgs,
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, _ []string, e *env) error {
			list, err := e.apps.List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMODE\tSOURCE\tSTATUS\tPUBLISHED\tID")
			for _, a := range list {
				status, published := "enabled", "-"
				if !a.Enabled {
					status = "disabled"
				}
				switch {
				case a.PublishedVersion != "":
					published = a.PublishedVersion
				case a.Mode == apps.ModeAgent && a.Bound == nil:
					published = "no bound agent"
				case a.Mode == apps.ModeAgent && a.Bound.Published == nil:
					published = "agent draft only"
				case a.Mode == apps.ModeAgent:
					published = fmt.Sprintf("agent version %d", a.Bound.Version)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.Mode, a.Source, status, published, a.ID)
			}
			for _, name := range e.nameClashes {
				fmt.Fprintf(tw, "%s\t-\tconfig\tnot served: an imported app has this name\t-\t-\n", name)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return listUnmapped(cmd.OutOrStdout(), list)
		}),
	}
}

// listUnmapped follows the app list with the datasets imports left unmapped, app by app, and
// how to map them; it prints nothing when every dataset is mapped.
func listUnmapped(w io.Writer, list []*apps.App) error {
	first := true
	for _, a := range list {
		if len(a.UnmappedDatasets) == 0 {
			continue
		}
		if first {
			first = false
			if _, err := fmt.Fprintln(w, "\nDatasets not mapped to a knowledge base (retrieval leaves them out; export the app and\n"+
				"import it again with --dataset ID=KNOWLEDGE_BASE to map them):"); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "  %s: %s\n", a.Name, strings.Join(a.UnmappedDatasets, ", ")); err != nil {
			return err
		}
	}
	return nil
}

func newAppsExportCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "export NAME",
		Short: "Print an app as a Dify DSL file on stdout",
		Long: "Print an app, imported or from the config file, as a Dify DSL file. The output imports\n" +
			"back unchanged: importing it and exporting again gives the same bytes.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			a, err := e.apps.ByName(cmd.Context(), args[0])
			if err != nil {
				return appErr(cmd.Context(), e, err, args[0])
			}
			out, err := dsl.Export(a, dsl.Env{Providers: e.file.Providers})
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		}),
	}
}

func newAppsPublishCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "publish NAME",
		Short: "Publish an imported app's current definition as a new version",
		Long: "Publish an imported app. For the kinds that have versions (Agent, Chatflow and Workflow\n" +
			"apps) the current definition becomes a new, immutable version, which the API runs from then\n" +
			"on, and the version's id is printed on stdout (its number goes to stderr); for an Agent app,\n" +
			"the draft of its bound agent does. Chatbot, Completion and Legacy Agent apps have no versions:\n" +
			"they are served as imported, so publishing them is accepted, changes nothing and prints nothing\n" +
			"on stdout.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			return printPublished(cmd, e, args[0])
		}),
	}
}

// printPublished publishes the app and prints the new version's id on stdout.
func printPublished(cmd *cobra.Command, e *env, name string) error {
	p, err := publishApp(cmd.Context(), e, name, cmd.ErrOrStderr())
	if err != nil || !p.Versioned {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), p.VersionID)
	return err
}

// publishApp publishes the app and says what that did on w (stderr).
func publishApp(ctx context.Context, e *env, name string, w io.Writer) (apps.Published, error) {
	p, err := e.apps.Publish(ctx, name)
	if err != nil {
		return p, appErr(ctx, e, err, name)
	}
	if !p.Versioned {
		fmt.Fprintf(w, "parley: %s apps have no versions; %q is served as imported\n", p.App.Mode, name)
		return p, nil
	}
	fmt.Fprintf(w, "parley: published %q version %d (%s)\n", name, p.Version, p.VersionID)
	e.log.Debug("app published", "app", name, "version", p.Version, "version_id", p.VersionID)
	if p.App.Mode == apps.ModeWorkflow {
		// The triggers of the new version are ready at once: new webhooks have their URLs, new
		// schedules their first tick (a running server would sync them within a poll).
		ts, err := triggerService(e).Sync(ctx, p.App)
		if err != nil {
			return p, err
		}
		if len(ts) > 0 {
			fmt.Fprintf(w, "parley: %q starts from %d trigger(s): parley apps triggers %s lists them\n", name, len(ts), shellQuote(name))
		}
	}
	return p, nil
}

func newAppsDeleteCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an imported app and revoke its keys",
		Long: "Delete an imported app: it stops being served at once, its API keys are revoked and its\n" +
			"name is free again. Its conversations stay in the database. Apps of the config file are\n" +
			"removed by editing the file.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			if err := e.apps.Delete(cmd.Context(), args[0]); err != nil {
				return appErr(cmd.Context(), e, err, args[0])
			}
			e.log.Info("app deleted", "app", args[0])
			return nil
		}),
	}
}

// appErr words a registry error for the command line: an unknown name is reported with the
// config file that was read and the apps this server knows, so a typo or the wrong config (or
// data dir) shows at once.
func appErr(ctx context.Context, e *env, err error, name string) error {
	if !errors.Is(err, apps.ErrNotFound) {
		return err
	}
	msg := fmt.Sprintf("no app named %q in the config file (%s) or among the imported apps", name, configName(e.cfg.ConfigPath))
	list, lerr := e.apps.List(ctx)
	switch {
	case lerr != nil:
	case len(list) == 0:
		msg += "; there are no apps yet: declare one in the config file or import a Dify DSL file (parley apps import FILE)"
	default:
		known := make([]string, 0, len(list))
		for _, a := range list {
			known = append(known, fmt.Sprintf("%s (%s)", a.Name, a.Mode))
		}
		msg += "; the apps are: " + strings.Join(known, ", ")
	}
	return errors.New(msg)
}

// importErr adds to a failed import the flag that gets past an unresolvable model.
func importErr(err error, opts dsl.Options) error {
	var ie *dsl.Error
	if opts.ModelFallback == "" && errors.As(err, &ie) && ie.HasUnresolvedModel() {
		return fmt.Errorf("%w\nhint: --model-fallback PROVIDER:MODEL uses a configured model for every model that does not resolve", err)
	}
	return err
}

// shellQuote quotes s for a shell command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newAppsMCPCmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		enable, disable, rotate bool
		description, baseURL    string
		params                  []string
	)
	cmd := &cobra.Command{
		Use:   "mcp NAME [--enable | --disable] [--rotate] [--description TEXT] [--param VARIABLE=DESCRIPTION]... [--url BASE]",
		Short: "Publish an app as an MCP server: turn it on or off, issue a new URL, describe its tool",
		Long: "Publish an app as an MCP server (Streamable HTTP) whose one tool is the app, at\n" +
			"BASE/mcp/server/CODE/mcp; CODE is a secret like an API key. --enable turns the server on,\n" +
			"creating it the first time, and --rotate issues a new code (the old URL stops working at\n" +
			"once): both print the full URL alone on stdout. It is shown only then: the code is stored\n" +
			"hashed, so enabling a server again keeps its URL without printing it (--rotate prints a\n" +
			"new one). --disable turns the server off; its URL answers \"Server is not active\".\n" +
			"--description sets the tool's description (by default the app's), --param the description\n" +
			"of one input of the tool (VARIABLE= removes it). Without flags, the server's settings are\n" +
			"printed. BASE is --url, else PARLEY_FILES_URL, else http:// and the listen address.\n" +
			"See docs/mcp-server.md.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			a, err := e.apps.ByName(ctx, args[0])
			if err != nil {
				return appErr(ctx, e, err, args[0])
			}
			fl := cmd.Flags()
			ch := mcpserver.Change{Enable: enable, Disable: disable, Rotate: rotate}
			if enable && disable {
				return errors.New("--enable and --disable cannot go together")
			}
			if fl.Changed("description") {
				ch.Description = &description
			}
			if ch.Params, err = mcpParams(a, params); err != nil {
				return err
			}
			svc := mcpserver.New(e.store)
			stderr := cmd.ErrOrStderr()
			if !enable && !disable && !rotate && ch.Description == nil && len(ch.Params) == 0 {
				srv, err := svc.ByApp(ctx, a.ID)
				if errors.Is(err, mcpserver.ErrNoServer) {
					fmt.Fprintf(stderr, "parley: %q is not published as an MCP server (parley apps mcp %s --enable)\n", a.Name, shellQuote(a.Name))
					return nil
				} else if err != nil {
					return err
				}
				return printMCPServer(cmd.OutOrStdout(), a, srv, mcpBase(e, baseURL))
			}
			srv, code, err := svc.Apply(ctx, a.ID, ch)
			if errors.Is(err, mcpserver.ErrNoServer) {
				return fmt.Errorf("%q is not published as an MCP server: --enable creates its server", a.Name)
			} else if err != nil {
				return err
			}
			e.log.Info("mcp server changed", "app", a.Name, "mcp_server_id", srv.ID, "status", srv.Status,
				"code_prefix", srv.CodePrefix, "new_code", code != "")
			if a.Versioned() && a.Mode != apps.ModeAgent && a.PublishedVersion == "" {
				fmt.Fprintf(stderr, "parley: %q is not published: its MCP server answers \"App is unavailable\" until it is (parley apps publish %s)\n",
					a.Name, shellQuote(a.Name))
			}
			if srv.Status != store.MCPServerActive {
				fmt.Fprintf(stderr, "parley: the MCP server of %q is disabled (--enable turns it on)\n", a.Name)
			}
			base := mcpBase(e, baseURL)
			if code != "" {
				if base.guessed {
					fmt.Fprintf(stderr, "parley: the URL starts with the listen address; set PARLEY_FILES_URL (or --url) to the address clients reach\n")
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), base.url+mcpserver.Path(code))
				return err
			}
			if enable {
				fmt.Fprintf(stderr, "parley: the MCP server of %q is enabled at the URL printed when its code was issued (%s); "+
					"--rotate issues a new one\n", a.Name, base.url+mcpserver.Path(srv.CodePrefix+"…"))
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&enable, "enable", false, "turn the app's MCP server on (creating it, and printing its URL, the first time)")
	fl.BoolVar(&disable, "disable", false, "turn the app's MCP server off")
	fl.BoolVar(&rotate, "rotate", false, "issue a new server code and print the new URL (the old one stops working)")
	fl.StringVar(&description, "description", "", "the tool's description and the server's instructions (empty: the app's description)")
	fl.StringArrayVar(&params, "param", nil, "VARIABLE=DESCRIPTION: the description of an input of the tool (VARIABLE= removes it); repeatable")
	fl.StringVar(&baseURL, "url", "", "the address clients reach the server at, for the printed URL (default PARLEY_FILES_URL, else the listen address)")
	return cmd
}

// mcpParams parses --param values, checking each variable against the inputs the app's tool
// takes.
func mcpParams(a *apps.App, params []string) (map[string]string, error) {
	if len(params) == 0 {
		return nil, nil
	}
	form := a
	if a.Mode == apps.ModeAgent {
		if pub, err := a.PublishedAgent(); err == nil {
			form = pub
		}
	}
	known := mcpserver.Variables(form.UserInputForm)
	out := map[string]string{}
	for _, p := range params {
		name, desc, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: want VARIABLE=DESCRIPTION", p)
		}
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return nil, fmt.Errorf("--param %q: the tool of %q takes no inputs", name, a.Name)
			}
			return nil, fmt.Errorf("--param %q: the tool of %q takes %s", name, a.Name, strings.Join(known, ", "))
		}
		out[name] = desc
	}
	return out, nil
}

// mcpBaseURL is where the printed URLs of MCP servers start; guessed when it comes from the
// listen address rather than from a public URL.
type mcpBaseURL struct {
	url     string
	guessed bool
}

// mcpBase is the --url flag, else PARLEY_FILES_URL (the server's public URL), else http:// and
// the listen address (a wildcard host as 127.0.0.1).
func mcpBase(e *env, flag string) mcpBaseURL {
	switch {
	case flag != "":
		return mcpBaseURL{url: strings.TrimRight(flag, "/")}
	case e.cfg.FilesURL != "":
		return mcpBaseURL{url: strings.TrimRight(e.cfg.FilesURL, "/")}
	}
	host, port, err := net.SplitHostPort(e.cfg.Addr)
	if err != nil {
		return mcpBaseURL{url: "http://" + e.cfg.Addr, guessed: true}
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return mcpBaseURL{url: "http://" + net.JoinHostPort(host, port), guessed: true}
}

// printMCPServer prints an MCP server's settings; its URL shows only the code's prefix.
func printMCPServer(w io.Writer, a *apps.App, srv store.MCPServer, base mcpBaseURL) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	desc := srv.Description
	if desc == "" {
		desc = a.Description + " (the app's)"
	}
	client := srv.ClientName
	if client == "" {
		client = "-"
	}
	fmt.Fprintf(tw, "status\t%s\n", srv.Status)
	fmt.Fprintf(tw, "url\t%s (the code was shown when issued; --rotate for a new one)\n", base.url+mcpserver.Path(srv.CodePrefix+"…"))
	fmt.Fprintf(tw, "tool\t%s\n", mcpserver.ToolName(a.Name))
	fmt.Fprintf(tw, "description\t%s\n", desc)
	names := slices.Sorted(maps.Keys(srv.Parameters))
	for i, n := range names {
		label := ""
		if i == 0 {
			label = "parameters"
		}
		fmt.Fprintf(tw, "%s\t%s: %s\n", label, n, srv.Parameters[n])
	}
	fmt.Fprintf(tw, "end user\t%s\n", mcpserver.User(srv.ID))
	fmt.Fprintf(tw, "last client\t%s\n", client)
	return tw.Flush()
}

func newAppsLimitsCmd(getenv func(string) string, f *flags) *cobra.Command {
	var l store.Limits
	cmd := &cobra.Command{
		Use:   "limits NAME [--requests-per-minute N] [--tokens-per-day N] [--workflow-runs-per-day N]",
		Short: "Show or set an imported app's rate limits",
		Long: "Show an app's rate limits, or set an imported app's: they hold whatever key calls it, at\n" +
			"once on every server (docs/limits.md). A limit not given is no limit. The limits of an app\n" +
			"of the config file are its rate_limits there.",
		Args: cobra.ExactArgs(1),
		PreRunE: func(*cobra.Command, []string) error {
			if l.RequestsPerMinute < 0 || l.TokensPerDay < 0 || l.WorkflowRunsPerDay < 0 {
				return errors.New("a limit must not be negative (0 is no limit)")
			}
			return nil
		},
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			a, err := e.apps.ByName(cmd.Context(), args[0])
			if err != nil {
				return appErr(cmd.Context(), e, err, args[0])
			}
			if !cmd.Flags().Changed("requests-per-minute") && !cmd.Flags().Changed("tokens-per-day") && !cmd.Flags().Changed("workflow-runs-per-day") {
				fmt.Fprintln(cmd.OutOrStdout(), limitsText(a.Limits))
				return nil
			}
			if a.Source != apps.SourceImport {
				return fmt.Errorf("%q is an app of the config file (%s): set its rate_limits there", a.Name, configName(e.cfg.ConfigPath))
			}
			if err := e.store.SetAppLimits(cmd.Context(), a.ID, l); err != nil {
				return err
			}
			e.log.Info("app limits set", "app", a.Name, "limits", limitsText(l))
			return nil
		}),
	}
	limitFlags(cmd, &l)
	return cmd
}

func newAppsTriggersCmd(getenv func(string) string, f *flags) *cobra.Command {
	var pause, resume, baseURL string
	cmd := &cobra.Command{
		Use:   "triggers NAME [--pause NODE_ID | --resume NODE_ID] [--url BASE]",
		Short: "List a Workflow app's triggers (webhooks, schedules); pause and resume one",
		Long: "List the triggers of a published Workflow app that starts from trigger nodes, one line each:\n" +
			"its node id, its kind (webhook or schedule), and a webhook's full URL or a schedule's next\n" +
			"run time (RFC 3339, in the schedule's time zone; - when it is paused or never ticks again),\n" +
			"then \"paused\" for a paused trigger. A webhook's URL is BASE/triggers/webhook/ID: ID is a\n" +
			"random secret the node keeps for as long as it stays in the app's published graph. BASE is\n" +
			"--url, else PARLEY_TRIGGER_URL, else http:// and the listen address.\n" +
			"--pause NODE_ID stops a trigger: a paused schedule does not tick, a paused webhook answers\n" +
			"404; --resume NODE_ID starts it again (a schedule from its next tick: the ticks it missed\n" +
			"while paused do not run). A running server sees the change at once. See docs/triggers.md.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			if pause != "" && resume != "" {
				return errors.New("--pause and --resume cannot go together")
			}
			a, err := e.apps.ByName(ctx, args[0])
			if err != nil {
				return appErr(ctx, e, err, args[0])
			}
			stderr := cmd.ErrOrStderr()
			if a.Mode != apps.ModeWorkflow {
				return fmt.Errorf("%q is a %s app: only Workflow apps start from triggers", a.Name, a.Mode)
			}
			if a.PublishedVersion == "" {
				return fmt.Errorf("%q is not published: its triggers are those of its published version (parley apps publish %s)",
					a.Name, shellQuote(a.Name))
			}
			svc := triggerService(e)
			if baseURL != "" {
				svc = triggers.New(triggers.Options{Store: e.store, Apps: e.apps, URL: baseURL})
			}
			if node := pause + resume; node != "" {
				t, err := svc.SetPaused(ctx, a, node, pause != "")
				if err != nil {
					return err
				}
				e.log.Info("trigger changed", "app", a.Name, "node_id", node, "status", t.Status)
			}
			list, err := svc.List(ctx, a)
			if err != nil {
				return err
			}
			if len(list) == 0 {
				fmt.Fprintf(stderr, "parley: %q has no triggers: it starts from its user-input start node (POST /workflows/run)\n", a.Name)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, t := range list {
				what := "-"
				switch {
				case t.URL != "":
					what = t.URL
				case t.Next != nil:
					what = t.Next.Format(time.RFC3339)
				}
				line := t.NodeID + "\t" + t.Kind + "\t" + what
				if t.Status == store.TriggerPaused {
					line += "\tpaused"
				}
				fmt.Fprintln(tw, line)
			}
			return tw.Flush()
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&pause, "pause", "", "NODE_ID: pause that trigger (a schedule stops ticking, a webhook answers 404)")
	fl.StringVar(&resume, "resume", "", "NODE_ID: resume that trigger (a schedule from its next tick)")
	fl.StringVar(&baseURL, "url", "", "the address clients reach the server at, for the printed URLs (default PARLEY_TRIGGER_URL, else the listen address)")
	return cmd
}

// triggerService is the triggers of the CLI's apps: enough to sync, list, pause and resume them.
func triggerService(e *env) *triggers.Service {
	return triggers.New(triggers.Options{Store: e.store, Apps: e.apps, URL: e.cfg.TriggerBaseURL(), Logger: e.log})
}
