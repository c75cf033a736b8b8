// Package redistest gives tests a real Redis server and a key prefix of their own.
//
// The server is the one scripts/services.sh starts (127.0.0.1:6379), or the one
// PARLEY_TEST_REDIS_URL names. Each test gets a random key prefix; its keys are deleted when
// the test ends. If the server is unreachable, tests fail when CI is set or
// PARLEY_REQUIRE_REDIS=1, and are skipped loudly otherwise (as storetest does for
// PostgreSQL).
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parleyhq/parley/internal/redisx"
)

// Environment variables read by this package.
const (
	// EnvRedisURL overrides DefaultURL.
	EnvRedisURL = "PARLEY_TEST_REDIS_URL"
	// EnvRequireRedis set to "1" makes an unreachable server fatal.
	EnvRequireRedis = "PARLEY_REQUIRE_REDIS"
)

// DefaultURL is the server scripts/services.sh starts.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns the URL of the test server: $PARLEY_TEST_REDIS_URL or DefaultURL.
func URL() string {
	if u := os.Getenv(EnvRedisURL); u != "" {
		return u
	}
	return DefaultURL
}

// Required reports whether an unreachable server must fail the tests rather than skip them.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv(EnvRequireRedis) == "1"
}

var (
	probeOnce sync.Once
	probeErr  error
	warnOnce  sync.Once
)

// Available returns nil when the test server answers; it probes once per process.
func Available() error {
	probeOnce.Do(func() {
		c, err := redisx.Open(context.Background(), URL())
		if err != nil {
			probeErr = err
			return
		}
		_ = c.Close()
	})
	return probeErr
}

// Skip skips or fails tb when the test server is unreachable.
func Skip(tb testing.TB) {
	tb.Helper()
	err := Available()
	if err == nil {
		return
	}
	if Required() {
		tb.Fatalf("redistest: Redis at %s is required (CI or %s=1) but unreachable: %v", URL(), EnvRequireRedis, err)
	}
	warnOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "\n*** redistest: Redis at %s is unreachable (%v): SKIPPING ALL REDIS TESTS. Run scripts/services.sh. ***\n\n", URL(), err)
	})
	tb.Skipf("*** SKIPPED: Redis at %s unreachable (%v); run scripts/services.sh, or set CI=1 / %s=1 to make this fatal ***", URL(), err, EnvRequireRedis)
}

// Prefix returns a fresh key prefix ("parley_test_<hex>:") whose keys are deleted when tb
// ends.
func Prefix(tb testing.TB) string {
	tb.Helper()
	Skip(tb)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	prefix := "parley_test_" + hex.EncodeToString(b) + ":"
	tb.Cleanup(func() {
		c, err := redisx.Open(context.Background(), URL())
		if err != nil {
			tb.Errorf("redistest: clean up %s: %v", prefix, err)
			return
		}
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("redistest: clean up %s: %v", prefix, err)
		}
	})
	return prefix
}

// Client returns a client of the test server, closed when tb ends, and a fresh key prefix.
func Client(tb testing.TB) (*redis.Client, string) {
	tb.Helper()
	prefix := Prefix(tb)
	c, err := redisx.Open(context.Background(), URL())
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, prefix
}

// Server is a redis-server process of the test's own, on a free loopback port, which the test
// may stop and start again (to see what a replica does when Redis goes away and comes back).
type Server struct {
	// URL is the server's redis:// URL; it stays the same across Stop and Start.
	URL  string
	port int
	dir  string
	cmd  *exec.Cmd
}

// StartServer runs a private redis-server (skipping or failing like Skip when the binary is
// missing) and stops it when tb ends.
func StartServer(tb testing.TB) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if Required() {
			tb.Fatalf("redistest: redis-server is required (CI or %s=1) but not installed: run scripts/services.sh", EnvRequireRedis)
		}
		tb.Skip("*** SKIPPED: redis-server is not installed; run scripts/services.sh ***")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &Server{URL: "redis://127.0.0.1:" + strconv.Itoa(port) + "/0", port: port, dir: tb.TempDir()}
	s.Start(tb)
	tb.Cleanup(s.Stop)
	return s
}

// Start runs the server (again) on its port and waits until it answers.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if s.cmd != nil {
		tb.Fatal("redistest: server already running")
	}
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := redisx.Open(context.Background(), s.URL)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: redis-server on port %d did not answer: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits for it to exit; a stopped server is a no-op.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}
