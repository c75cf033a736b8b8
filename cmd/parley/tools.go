package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/netguard"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/audiotools"
	"github.com/parleyhq/parley/internal/tools/builtin"
	"github.com/parleyhq/parley/internal/tools/filetools"
	"github.com/parleyhq/parley/internal/tools/mcptools"
	"github.com/parleyhq/parley/internal/tools/mdexport"
	"github.com/parleyhq/parley/internal/tools/toolreg"
	"github.com/parleyhq/parley/internal/tools/workflowtool"
	"github.com/parleyhq/parley/internal/tracing"
)

// serverTools is what the tools that run only in the server call: Workflow apps run as
// workflow tools, and the audio service of the audio tools. Commands outside the server only
// resolve tools, and pass none.
type serverTools struct {
	runWorkflow func(ctx context.Context, app *apps.App, user string, inputs map[string]any) (workflowtool.Outcome, error)
	audio       audiotools.Audio
}

// toolRegistry is the workspace's tool registry, reaching APIs and MCP servers through the
// network guard with the internal networks PARLEY_TOOLS_ALLOWED_NETWORKS lets through. Its
// workflow tools are the Workflow apps of e; st (nil outside the server) runs them and the
// audio tools.
func toolRegistry(e *env, st *serverTools) (*toolreg.Registry, error) {
	hc, err := toolsClient(e)
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = &serverTools{runWorkflow: func(context.Context, *apps.App, string, map[string]any) (workflowtool.Outcome, error) {
			return workflowtool.Outcome{}, errors.New("workflows run only in the server")
		}}
	}
	workflows := workflowtool.New(workflowtool.Options{App: e.apps.ByName, Run: st.runWorkflow})
	return toolreg.New(toolreg.Options{Store: e.store, Builtin: builtinTools(hc, st.audio), Workflow: workflows.Find, HTTPClient: hc, Logger: e.log})
}

// finder finds a tool an app names; tools.ErrUnknownTool when it has none of that name.
type finder func(ctx context.Context, ref tools.Ref) (tools.Tool, error)

// builtinTools finds the tools Parley ships with: the built-in tools, then the file and data
// plugins' tools, then the audio tools, which call models through a (nil: they only resolve),
// then the MCP plugins' tools, which reach servers through hc, then the Markdown Exporter's.
func builtinTools(hc *http.Client, a audiotools.Audio) finder {
	return firstFound(builtin.Find, filetools.Find, audiotools.New(a).Find, mcptools.New(hc).Find, mdexport.Find)
}

// firstFound asks each finder in turn, until one knows the tool or fails otherwise.
func firstFound(finders ...finder) finder {
	return func(ctx context.Context, ref tools.Ref) (tools.Tool, error) {
		err := fmt.Errorf("%w: %s/%s", tools.ErrUnknownTool, ref.Provider(), ref.Name)
		for _, find := range finders {
			var t tools.Tool
			if t, err = find(ctx, ref); !errors.Is(err, tools.ErrUnknownTool) {
				return t, err
			}
		}
		return nil, err
	}
}

// workflowToolRuns runs the Workflow apps called as tools on the engine *engine points to once
// the server has built it, and waits for each run's end.
func workflowToolRuns(engine **run.Engine) func(ctx context.Context, app *apps.App, user string, inputs map[string]any) (workflowtool.Outcome, error) {
	return func(ctx context.Context, app *apps.App, user string, inputs map[string]any) (workflowtool.Outcome, error) {
		if *engine == nil {
			return workflowtool.Outcome{}, errors.New("the server is not ready to run workflows")
		}
		r, err := (*engine).Start(ctx, run.Request{App: app, User: user, Inputs: inputs})
		if err != nil {
			return workflowtool.Outcome{}, err
		}
		_, end, err := r.WaitWorkflow(ctx)
		if err != nil {
			return workflowtool.Outcome{}, err
		}
		if end.Kind == run.EventWorkflowPaused {
			return workflowtool.Outcome{}, errors.New("the workflow paused for a human input form, which a tool call cannot wait for")
		}
		raw, err := json.Marshal(end.Data)
		if err != nil {
			return workflowtool.Outcome{}, err
		}
		var d struct {
			Status  string         `json:"status"`
			Outputs map[string]any `json:"outputs"`
			Error   *string        `json:"error"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return workflowtool.Outcome{}, err
		}
		out := workflowtool.Outcome{Status: d.Status, Outputs: d.Outputs}
		if d.Error != nil {
			out.Error = *d.Error
		}
		return out, nil
	}
}

// toolsClient is the HTTP client tools reach APIs and MCP servers with: through the network
// guard, with the internal networks PARLEY_TOOLS_ALLOWED_NETWORKS lets through.
// Their requests carry the run's traceparent when tracing is on.
func toolsClient(e *env) (*http.Client, error) {
	c, err := netguard.ClientAllowing(nil, e.cfg.ToolsAllowedNetworks, nil)
	if err != nil {
		return nil, err
	}
	c.Transport = tracing.Transport(c.Transport)
	return c, nil
}

// withTools is withEnv with the tool registry.
func withTools(getenv func(string) string, f *flags, fn func(cmd *cobra.Command, args []string, e *env, r *toolreg.Registry) error) func(*cobra.Command, []string) error {
	return withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
		r, err := toolRegistry(e, nil)
		if err != nil {
			return err
		}
		defer r.Close()
		return fn(cmd, args, e, r)
	})
}

func newToolsCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Register the workspace's custom API tools and MCP servers for agent apps",
		Long: "Agent apps use built-in tools, custom API tools (the operations of an OpenAPI 3 or Swagger 2\n" +
			"document) and the tools of MCP servers (Streamable HTTP or HTTP+SSE). API and MCP providers\n" +
			"are registered once for the workspace; a running server uses a change at once. Tools reach\n" +
			"internal addresses only within PARLEY_TOOLS_ALLOWED_NETWORKS.",
	}
	cmd.AddCommand(newToolsAddAPICmd(getenv, f), newToolsAddMCPCmd(getenv, f), newToolsRefreshCmd(getenv, f),
		newToolsListCmd(getenv, f), newToolsDeleteCmd(getenv, f))
	return cmd
}

// headerFlags are the --header and --header-env flags of a registration.
type headerFlags struct {
	plain, fromEnv []string
}

func (h *headerFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&h.plain, "header", nil, "NAME=VALUE: a header sent with every request; repeatable")
	cmd.Flags().StringArrayVar(&h.fromEnv, "header-env", nil, "NAME=VAR: a header whose value is the environment variable VAR (for secrets); repeatable")
}

func (h *headerFlags) resolve(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range h.plain {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--header %q: want NAME=VALUE", kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	for _, kv := range h.fromEnv {
		k, name, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" || name == "" {
			return nil, fmt.Errorf("--header-env %q: want NAME=VAR", kv)
		}
		v := getenv(name)
		if v == "" {
			return nil, fmt.Errorf("--header-env %s: the environment variable %s is empty", k, name)
		}
		out[strings.TrimSpace(k)] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func newToolsAddAPICmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		a               toolreg.API
		schema          string
		keyEnv, keyFile string
		headers         headerFlags
		timeout         time.Duration
		replace         bool
	)
	cmd := &cobra.Command{
		Use:   "add-api NAME --schema FILE [--auth none|api_key|bearer|basic|query --key-env VAR|--key-file FILE] [--key-header NAME] [--header NAME=VALUE]... [--replace]",
		Short: "Register a custom API tool provider from an OpenAPI 3 or Swagger 2 document",
		Long: "Register the operations of an OpenAPI 3 or Swagger 2 document (JSON or YAML, FILE - reads stdin)\n" +
			"as tools named by their operationId. Apps name the provider by NAME (Dify's provider_name) or\n" +
			"its id (provider_id), and each tool by its name. The document must parse, or nothing is\n" +
			"registered. Credentials: --auth api_key sends the key as is in --key-header (Authorization\n" +
			"by default), bearer and basic in Authorization, query as the query parameter --key-query\n" +
			"(\"key\" by default). The key comes from an environment variable or a file, never from the\n" +
			"command line, and is never printed.",
		Args: cobra.ExactArgs(1),
		RunE: withTools(getenv, f, func(cmd *cobra.Command, args []string, e *env, r *toolreg.Registry) error {
			doc, err := readDoc(schema, cmd.InOrStdin())
			if err != nil {
				return err
			}
			a.Schema = doc
			if a.Key, err = readKey(getenv, keyEnv, keyFile); err != nil {
				return err
			}
			if a.Headers, err = headers.resolve(getenv); err != nil {
				return err
			}
			a.Timeout = toolreg.Duration(timeout)
			s, err := r.AddAPI(cmd.Context(), args[0], a, replace)
			if err != nil {
				return err
			}
			e.log.Info("tool provider registered", "tool_provider", s.Name, "kind", s.Kind, "id", s.ID, "tools", len(s.Tools))
			fmt.Fprintf(cmd.ErrOrStderr(), "parley: %d tools: %s\n", len(s.Tools), strings.Join(s.Tools, ", "))
			fmt.Fprintln(cmd.OutOrStdout(), s.Name)
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&schema, "schema", "", "the OpenAPI 3 or Swagger 2 document (- for stdin)")
	fl.StringVar(&a.ServerURL, "server-url", "", "the API's base URL, instead of the document's servers")
	fl.StringVar(&a.Auth, "auth", toolreg.AuthNone, "none, api_key, bearer, basic or query")
	fl.StringVar(&keyEnv, "key-env", "", "environment variable holding the key")
	fl.StringVar(&keyFile, "key-file", "", "file holding the key (trailing newline dropped)")
	fl.StringVar(&a.KeyHeader, "key-header", "", "header of an api_key (default Authorization)")
	fl.StringVar(&a.KeyQuery, "key-query", "", "query parameter of a query key (default key)")
	fl.DurationVar(&timeout, "timeout", 0, "bound of one call (default 60s)")
	fl.BoolVar(&replace, "replace", false, "replace a provider of that name, keeping its id")
	headers.add(cmd)
	_ = cmd.MarkFlagRequired("schema")
	return cmd
}

func newToolsAddMCPCmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		m       toolreg.MCP
		headers headerFlags
		timeout time.Duration
		replace bool
	)
	cmd := &cobra.Command{
		Use:   "add-mcp NAME URL [--id SERVER_ID] [--header NAME=VALUE]... [--header-env NAME=VAR]... [--timeout 30s] [--replace]",
		Short: "Register an MCP server (Streamable HTTP or HTTP+SSE) as a tool provider",
		Long: "Register the MCP server at URL (HTTP+SSE when its path ends in /sse, otherwise Streamable\n" +
			"HTTP, falling back to HTTP+SSE when the server answers 4xx): Parley connects, lists its tools\n" +
			"and keeps the list (parley tools refresh NAME lists them again). Apps name the server by its identifier\n" +
			"(--id, Dify's provider_id; NAME when omitted: 1 to 24 of a-z 0-9 _ -) or by NAME, and each\n" +
			"tool by its MCP name.",
		Args: cobra.ExactArgs(2),
		RunE: withTools(getenv, f, func(cmd *cobra.Command, args []string, e *env, r *toolreg.Registry) error {
			var err error
			m.URL = args[1]
			if m.Headers, err = headers.resolve(getenv); err != nil {
				return err
			}
			m.Timeout = toolreg.Duration(timeout)
			s, err := r.AddMCP(cmd.Context(), args[0], m, replace)
			if err != nil {
				return err
			}
			e.log.Info("tool provider registered", "tool_provider", s.Name, "kind", s.Kind, "server_identifier", s.ServerIdentifier, "tools", len(s.Tools))
			fmt.Fprintf(cmd.ErrOrStderr(), "parley: %d tools: %s\n", len(s.Tools), strings.Join(s.Tools, ", "))
			fmt.Fprintln(cmd.OutOrStdout(), s.Name)
			return nil
		}),
	}
	cmd.Flags().StringVar(&m.ServerIdentifier, "id", "", "server identifier apps name the server by (default NAME)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "bound of connecting, listing and each call (default 30s)")
	cmd.Flags().BoolVar(&replace, "replace", false, "replace a provider of that name, keeping its id")
	headers.add(cmd)
	return cmd
}

func newToolsRefreshCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "refresh NAME",
		Short: "List the tools of a registered MCP server again",
		Args:  cobra.ExactArgs(1),
		RunE: withTools(getenv, f, func(cmd *cobra.Command, args []string, e *env, r *toolreg.Registry) error {
			s, err := r.Refresh(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "parley: %d tools: %s\n", len(s.Tools), strings.Join(s.Tools, ", "))
			fmt.Fprintln(cmd.OutOrStdout(), s.Name)
			return nil
		}),
	}
}

func newToolsListCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the registered tool providers (never their credentials)",
		Args:  cobra.NoArgs,
		RunE: withTools(getenv, f, func(cmd *cobra.Command, _ []string, _ *env, r *toolreg.Registry) error {
			list, err := r.List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tKIND\tPROVIDER_ID\tENDPOINT\tAUTH\tHEADERS\tTOOLS")
			for _, s := range list {
				id, auth, endpoint := s.ID, s.Auth, s.Endpoint
				if s.ServerIdentifier != "" {
					id = s.ServerIdentifier
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, id, dash(endpoint), dash(auth),
					dash(strings.Join(s.Headers, ",")), dash(strings.Join(s.Tools, ",")))
			}
			return tw.Flush()
		}),
	}
}

func newToolsDeleteCmd(getenv func(string) string, f *flags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tool provider; apps naming its tools get an observation saying so",
		Args:  cobra.ExactArgs(1),
		RunE: withTools(getenv, f, func(cmd *cobra.Command, args []string, e *env, r *toolreg.Registry) error {
			if err := r.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			e.log.Info("tool provider deleted", "tool_provider", args[0])
			return nil
		}),
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// maxDocBytes bounds the document read; the parser refuses more than 1 MiB anyway.
const maxDocBytes = 2 << 20

func readDoc(path string, stdin io.Reader) (string, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxDocBytes))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

// readKey reads the secret from an environment variable or a file.
func readKey(getenv func(string) string, envVar, file string) (string, error) {
	switch {
	case envVar != "" && file != "":
		return "", errors.New("give one of --key-env and --key-file")
	case envVar != "":
		v := getenv(envVar)
		if v == "" {
			return "", fmt.Errorf("--key-env: the environment variable %s is empty", envVar)
		}
		return v, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return "", nil
}
