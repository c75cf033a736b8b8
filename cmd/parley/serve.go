package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/auth"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/server"
)

func newServeCmd(getenv func(string) string, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), getenv, f)
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "", "listen address (overrides PARLEY_ADDR)")
	return cmd
}

// serve runs the server until ctx ends (SIGINT/SIGTERM), then shuts down: stop accepting, cancel
// the requests' base context so open streams end, wait up to the grace period, close the store.
func serve(ctx context.Context, getenv func(string) string, f *flags) error {
	e, err := open(ctx, getenv, f)
	if err != nil {
		return err
	}
	defer e.store.Close()
	cfg := e.cfg

	ws, err := e.store.Workspace(ctx)
	if err != nil {
		return err
	}
	mode, err := server.ParseValidationMode(string(cfg.ResponseValidation))
	if err != nil {
		return err
	}
	registry, err := apps.NewRegistry(e.file.Apps, e.appIDs, cfg.MaxActiveRequests)
	if err != nil {
		return err
	}
	keys := auth.New(e.store, auth.WithLogger(e.log))
	defer keys.Close()
	handler, _, err := server.New(server.Options{
		Keys:          keys,
		Catalog:       models.NewCatalog(e.file.Providers, getenv),
		Apps:          registry,
		TenantID:      ws.ID,
		WorkspaceName: e.file.Workspace.Name,
		Limits: apps.Limits{
			File: cfg.Upload.FileSizeLimitMB, Image: cfg.Upload.ImageFileSizeLimitMB,
			Audio: cfg.Upload.AudioFileSizeLimitMB, Video: cfg.Upload.VideoFileSizeLimitMB,
			WorkflowFiles: workflowFileUploadLimit,
		},
		Logger:         e.log,
		Validation:     mode,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		MaxUploadBytes: int64(cfg.Upload.FileSizeLimitMB) << 20,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           handler,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	e.log.Info("listening", "addr", addr, "url", "http://"+addr+server.BasePath,
		"database", e.store.Dialect(), "data_dir", cfg.DataDir, "config", configName(cfg.ConfigPath),
		"response_validation", string(mode))

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	e.log.Info("shutting down", "grace", cfg.ShutdownGrace.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	cancelBase()
	if errors.Is(err, context.DeadlineExceeded) {
		e.log.Warn("grace period over; closing remaining connections")
		err = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	e.log.Info("stopped")
	return err
}

// workflowFileUploadLimit is Dify's WORKFLOW_FILE_UPLOAD_LIMIT default, shown in app parameters.
const workflowFileUploadLimit = 10

func configName(path string) string {
	if path == "" {
		return "embedded sample (configs/parley.yaml)"
	}
	return path
}
