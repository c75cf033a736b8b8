package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/sites"
)

// ensureSites returns the sites service and gives every app its site (a new one enabled, with
// its DSL `site` section and config `site` block; the config block is applied again to an
// existing one, so that it wins).
func ensureSites(ctx context.Context, e *env) (*sites.Service, error) {
	svc, err := sites.New(ctx, e.store, e.apps)
	if err != nil {
		return nil, err
	}
	list, err := e.apps.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		if _, err := svc.Ensure(ctx, a); err != nil {
			return nil, fmt.Errorf("the web site of app %q: %w", a.Name, err)
		}
	}
	return svc, nil
}

func newAppsSiteCmd(getenv func(string) string, f *flags) *cobra.Command {
	var (
		enable, disable, rotate, noPasscode bool
		passcode, baseURL                   string
		origins                             []string
		rpm                                 int64
	)
	cmd := &cobra.Command{
		Use: "site NAME [--enable | --disable] [--rotate] [--passcode VALUE | --no-passcode] [--allow-origin ORIGIN]... " +
			"[--requests-per-minute N] [--url BASE]",
		Short: "Print the URL of an app's web page; turn it on or off, give it a new code, a passcode, embedding origins",
		Long: "Print the full URL of the app's web page alone on stdout: BASE/chat/CODE for Chatbot, Agent and\n" +
			"Chatflow apps, BASE/completion/CODE for Completion apps, BASE/workflow/CODE for Workflow apps.\n" +
			"Every app has a page, enabled when the app is created. --disable turns it off (its URL and\n" +
			"the passports it gave stop working) and --enable on again; --rotate gives it a new code (the\n" +
			"old URL stops working, and so do its passports); --passcode sets the passcode the page asks\n" +
			"for, --no-passcode removes it; --allow-origin (repeatable; replaces the list, \"\" empties it)\n" +
			"names the origins that may embed the page; --requests-per-minute is the rate limit of each\n" +
			"end user of the page (0: none; default 60). A setting the app's `site` block in the config\n" +
			"file sets cannot be changed here. Settings are printed to stderr. BASE is --url, else\n" +
			"PARLEY_FILES_URL, else http:// and the listen address. See docs/web-pages.md.",
		Args: cobra.ExactArgs(1),
		RunE: withEnv(getenv, f, func(cmd *cobra.Command, args []string, e *env) error {
			ctx := cmd.Context()
			a, err := e.apps.ByName(ctx, args[0])
			if err != nil {
				return appErr(ctx, e, err, args[0])
			}
			fl := cmd.Flags()
			if enable && disable {
				return errors.New("--enable and --disable cannot go together")
			}
			if fl.Changed("passcode") && noPasscode {
				return errors.New("--passcode and --no-passcode cannot go together")
			}
			ch := sites.Change{Enable: enable, Disable: disable, Rotate: rotate}
			switch {
			case fl.Changed("passcode"):
				if passcode == "" {
					return errors.New("--passcode: give a value (--no-passcode removes the passcode)")
				}
				ch.Passcode = &passcode
			case noPasscode:
				empty := ""
				ch.Passcode = &empty
			}
			if fl.Changed("allow-origin") {
				ch.SetOrigins = true
				for _, o := range origins {
					o = strings.TrimRight(strings.TrimSpace(o), "/")
					if o == "" {
						continue
					}
					if !config.ValidOrigin(o) {
						return fmt.Errorf("--allow-origin %q: want an origin such as https://example.com (or *)", o)
					}
					ch.AllowedOrigins = append(ch.AllowedOrigins, o)
				}
			}
			if fl.Changed("requests-per-minute") {
				if rpm < 0 {
					return errors.New("--requests-per-minute must not be negative (0 is no limit)")
				}
				ch.RequestsPerMinute = &rpm
			}
			svc, err := sites.New(ctx, e.store, e.apps)
			if err != nil {
				return err
			}
			site, err := svc.Apply(ctx, a, ch)
			if errors.Is(err, sites.ErrConfigSet) {
				return fmt.Errorf("%q: %w (%s): change its site block there", a.Name, err, configName(e.cfg.ConfigPath))
			} else if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if enable || disable || rotate || ch.Passcode != nil || ch.SetOrigins || ch.RequestsPerMinute != nil {
				e.log.Info("site changed", "app", a.Name, "site_id", site.ID, "enabled", site.Enabled, "new_code", rotate,
					"passcode", site.PasscodeRequired, "allowed_origins", site.AllowedOrigins, "requests_per_minute", site.RequestsPerMinute)
			}
			printSiteSettings(stderr, site)
			base := mcpBase(e, baseURL)
			if base.guessed {
				fmt.Fprintf(stderr, "parley: the URL starts with the listen address; set PARLEY_FILES_URL (or --url) to the address clients reach\n")
			}
			if !a.Enabled {
				fmt.Fprintf(stderr, "parley: the app %q is disabled: its page answers \"app unavailable\"\n", a.Name)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), base.url+sites.PagePath(site.AppMode, site.Code))
			return err
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&enable, "enable", false, "turn the app's page on")
	fl.BoolVar(&disable, "disable", false, "turn the app's page off (its URL and passports stop working)")
	fl.BoolVar(&rotate, "rotate", false, "give the page a new code (the old URL and its passports stop working)")
	fl.StringVar(&passcode, "passcode", "", "the passcode the page asks for")
	fl.BoolVar(&noPasscode, "no-passcode", false, "remove the page's passcode")
	fl.StringArrayVar(&origins, "allow-origin", nil, "an origin that may embed the page, such as https://example.com (repeatable; replaces the list)")
	fl.Int64Var(&rpm, "requests-per-minute", 0, "the rate limit of each end user of the page (0: none)")
	fl.StringVar(&baseURL, "url", "", "the address clients reach the server at, for the printed URL (default PARLEY_FILES_URL, else the listen address)")
	return cmd
}

// printSiteSettings prints a site's settings, one per line, with "parley: site " before each.
func printSiteSettings(w io.Writer, s sites.Site) {
	status := "enabled"
	if !s.Enabled {
		status = "disabled"
	}
	origins := "(the server's own only)"
	if len(s.AllowedOrigins) > 0 {
		origins = strings.Join(s.AllowedOrigins, " ")
	}
	passcode := "none"
	if s.PasscodeRequired {
		passcode = "required"
	}
	fmt.Fprintf(w, "parley: site %s, title %q, passcode %s, embedding origins %s, %d requests per minute per end user\n",
		status, s.Title, passcode, origins, s.RequestsPerMinute)
}
