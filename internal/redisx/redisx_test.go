package redisx_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
)

func TestCheckURL(t *testing.T) {
	for _, ok := range []string{"redis://127.0.0.1:6379/0", "rediss://u:p@cache.example:6380", "redis://localhost"} {
		if err := redisx.CheckURL(ok); err != nil {
			t.Errorf("CheckURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"127.0.0.1:6379", "http://x", "redis://h/notadb", "redis://u:secret@h/x"} {
		err := redisx.CheckURL(bad)
		if err == nil {
			t.Errorf("CheckURL(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) leaks the password: %v", bad, err)
		}
	}
}

// TestOpenUnreachable: a port nobody listens on fails fast with ErrUnavailable.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, err = redisx.Open(context.Background(), "redis://"+addr)
	if !errors.Is(err, redisx.ErrUnavailable) {
		t.Fatalf("Open of a closed port = %v, want ErrUnavailable", err)
	}
}

// TestPingFollowsTheServer: Ping reports a server that went away as unavailable, and the same
// client works again once the server is back.
func TestPingFollowsTheServer(t *testing.T) {
	srv := redistest.StartServer(t)
	c, err := redisx.Open(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := redisx.Ping(ctx, c); err != nil {
		t.Fatalf("ping: %v", err)
	}
	srv.Stop()
	if err := redisx.Ping(ctx, c); !errors.Is(err, redisx.ErrUnavailable) {
		t.Fatalf("ping with the server down = %v, want ErrUnavailable", err)
	}
	srv.Start(t)
	if err := redisx.Ping(ctx, c); err != nil {
		t.Fatalf("ping after the server came back: %v", err)
	}
}
