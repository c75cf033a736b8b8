package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/extracttest"
	"github.com/parleyhq/parley/internal/knowledge/sandbox"
)

// childEnv marks the test binary started as the extraction child.
const childEnv = "PARLEY_SANDBOX_TEST_CHILD=1"

// TestMain lets the test binary play the child: run with childEnv, it is what `parley` runs
// from its hidden subcommand.
func TestMain(m *testing.M) {
	if os.Getenv("PARLEY_SANDBOX_TEST_CHILD") == "1" {
		os.Exit(sandbox.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func extractor(t *testing.T) *sandbox.Extractor {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &sandbox.Extractor{Path: self, Env: []string{childEnv}}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestExtractsLikeInProcess(t *testing.T) {
	x := extractor(t)
	x.CPU, x.Memory = 30*time.Second, 256<<20
	ctx := context.Background()
	md := []byte("# Title\n\nSome text.\n\n## Part two\n\nMore text, with ünïcode.\n")
	want, err := extract.Extract(ctx, "notes.md", bytes.NewReader(md), int64(len(md)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Extract(ctx, "notes.md", bytes.NewReader(md), int64(len(md)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text || strings.Join(got.Parts, "|") != strings.Join(want.Parts, "|") || len(got.Parts) != 2 {
		t.Fatalf("child extracted %+v, in-process %+v", got, want)
	}
	// An extraction error comes back with its kind and message.
	_, werr := extract.Extract(ctx, "bad.pdf", strings.NewReader("not a pdf"), 9)
	_, gerr := x.Extract(ctx, "bad.pdf", strings.NewReader("not a pdf"), 9)
	var we, ge *extract.Error
	if !errors.As(werr, &we) || !errors.As(gerr, &ge) || we.Kind != ge.Kind || we.Message != ge.Message {
		t.Fatalf("child error %v, in-process %v", gerr, werr)
	}
	// A file name that looks like a flag is still a name.
	got, err = x.Extract(ctx, "-memory=1.txt", strings.NewReader("plain"), 5)
	if err != nil || got.Text != "plain" {
		t.Fatalf("dash name: %+v %v", got, err)
	}
}

// TestRunawayParserStoppedByCPULimit feeds the child a PDF whose extraction takes minutes of
// CPU: the kernel kills the child at its CPU limit, the caller gets a readable error,
// and none of the child's work shows in this process's memory.
func TestRunawayParserStoppedByCPULimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel limits are applied on Linux")
	}
	x := extractor(t)
	x.CPU = time.Second
	// The budget of the whole call is far above the CPU limit: this is not what stops it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pdf := extracttest.SlowPDF()
	before := heapInUse()
	_, err := x.Extract(ctx, "loop.pdf", bytes.NewReader(pdf), int64(len(pdf)))
	var xe *extract.Error
	if !errors.As(err, &xe) || xe.Kind != extract.KindTooLarge || xe.Message != "The file could not be parsed within the CPU time limit of 1s." {
		t.Fatalf("runaway extraction: %v", err)
	}
	if grown := int64(heapInUse()) - int64(before); grown > 8<<20 {
		t.Fatalf("the parent's heap grew by %d bytes", grown)
	}
}

// endless is an endless text of words.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	const words = "lorem ipsum dolor sit amet "
	for i := range p {
		p[i] = words[i%len(words)]
	}
	return len(p), nil
}

// TestMemoryLimit makes the child read a file larger than its memory limit: it dies, the caller
// gets a readable error, and this process never holds the file.
func TestMemoryLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel limits are applied on Linux")
	}
	x := extractor(t)
	x.Memory = 64 << 20
	const size = 90 << 20
	before := heapInUse()
	_, err := x.Extract(context.Background(), "big.txt", io.LimitReader(endless{}, size), size)
	var xe *extract.Error
	if !errors.As(err, &xe) || xe.Kind != extract.KindTooLarge || xe.Message != "The file could not be parsed within the memory limit of 64 MB." {
		t.Fatalf("extraction over the memory limit: %v", err)
	}
	if grown := int64(heapInUse()) - int64(before); grown > 8<<20 {
		t.Fatalf("the parent's heap grew by %d bytes", grown)
	}
}

// stalled is a reader that never returns until released.
type stalled chan struct{}

func (s stalled) Read([]byte) (int, error) {
	<-s
	return 0, io.EOF
}

// TestContextKillsChild: a child that uses no CPU (its input stalls) is killed when the
// caller's context ends.
func TestContextKillsChild(t *testing.T) {
	x := extractor(t)
	x.CPU = time.Minute
	in := make(stalled)
	defer close(in)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := x.Extract(ctx, "slow.txt", in, -1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled extraction: %v", err)
	}
}

func TestChildFailure(t *testing.T) {
	x := extractor(t)
	x.Args = []string{"-no-such-flag"}
	_, err := x.Extract(context.Background(), "a.txt", strings.NewReader("a"), 1)
	var xe *extract.Error
	if !errors.As(err, &xe) || xe.Message != "The file could not be parsed: the parser stopped unexpectedly." {
		t.Fatalf("failed child: %v", err)
	}
	x.Path = "/nonexistent/parley"
	_, err = x.Extract(context.Background(), "a.txt", strings.NewReader("a"), 1)
	if !errors.As(err, &xe) || xe.Message != "The file could not be parsed: the parser could not be started." {
		t.Fatalf("missing child: %v", err)
	}
}
