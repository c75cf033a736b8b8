package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/parleyhq/parley/internal/store"
)

// freshDatabase creates an empty database on the server at serverURL and returns its URL and a
// function that drops it.
func freshDatabase(ctx context.Context, serverURL string) (string, func(), error) {
	admin, err := sql.Open("pgx", serverURL)
	if err != nil {
		return "", nil, err
	}
	name := "parley_bench_" + store.NewID()[:8]
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close()
	}, nil
}
