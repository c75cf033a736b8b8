// Package parleytest runs the parley binary from the outside, for the tests and the benchmarks
// that drive a real server process: it builds the binary as `make build` does, and reads a
// server's JSON log for the address it listens on.
package parleytest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Build compiles ./cmd/parley of the module whose root is root into out, as `make build` does:
// without cgo, with the version Go records from git (which GOFLAGS=-buildvcs=false would drop).
func Build(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", out, "./cmd/parley")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build parley: %w\n%s", err, b)
	}
	return nil
}

// MaxLogLine is the longest log line ReadLog reads whole.
const MaxLogLine = 1 << 20

// ReadLog reads a server's log (PARLEY_LOG_FORMAT=json) from r until it ends, in a goroutine of
// its own. Each line goes to each (none when nil), in order; the address of the first
// "listening" line is sent on addr (buffered: nobody has to take it). done is closed once the
// log has ended and been read to its end.
func ReadLog(r io.Reader, each func(line []byte)) (addr <-chan string, done <-chan struct{}) {
	a, d := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(d)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), MaxLogLine)
		sent := false
		for sc.Scan() {
			line := sc.Bytes()
			if each != nil {
				each(line)
			}
			if !sent {
				var rec struct{ Msg, Addr string }
				if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
					a <- rec.Addr
					sent = true
				}
			}
		}
		// A line past MaxLogLine stops the scanner; the rest is drained so that the server
		// never blocks writing its log.
		_, _ = io.Copy(io.Discard, r)
	}()
	return a, d
}
