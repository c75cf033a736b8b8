// Package sandbox runs text extraction (extract.Extract) in a child process bounded in CPU time,
// memory and wall-clock time. A parser caught in a loop cannot be stopped inside a Go process:
// its goroutine keeps a core busy and its memory until the process ends. A child process can be
// killed, and the kernel holds it to its resource limits.
//
// [Extractor] is the parent side. [Main] is the child side; the parley binary runs it from a
// hidden subcommand. The file goes to the child on its stdin, and the result comes back
// gob-encoded on its stdout.
package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/headtail"
	"github.com/parleyhq/parley/internal/rlimit"
)

// maxResult caps the encoded result read back from the child: the text, its parts and its pages
// are each at most about extract.MaxTextSize.
const maxResult = 4*extract.MaxTextSize + 1<<20

// stderrKept is how much of the child's stderr is kept, for the log and to tell why it died.
const stderrKept = 16 << 10

// childGrace is how long after the caller's deadline the child gives up by itself.
const childGrace = 5 * time.Second

// Messages of the errors a failed child maps to; they become the document's error.
const (
	msgStart   = "The file could not be parsed: the parser could not be started."
	msgCrashed = "The file could not be parsed: the parser stopped unexpectedly."
	msgInvalid = "The file could not be parsed: the parser returned an invalid result."
)

// result is what the child writes on its stdout.
type result struct {
	Text      string
	Parts     []string
	Pages     []extract.Page
	Truncated bool
	// ErrKind and ErrMessage carry an *extract.Error; Failure any other error (an ended
	// context, a failed read).
	ErrKind, ErrMessage string
	Failure             string
}

// Extractor runs extractions in child processes. Its Extract method has the signature of
// extract.Extract. The zero value is not usable: Path is required.
type Extractor struct {
	// Path and Args start the child side: a program whose command line, followed by the
	// arguments the Extractor adds, reaches Main.
	Path string
	Args []string
	// Env is the child's whole environment. Nil gives it an empty one: it needs none, and a
	// parser of untrusted input has no business seeing the server's secrets.
	Env []string
	// CPU is the CPU time one extraction may use, rounded up to whole seconds; 0 means no limit.
	CPU time.Duration
	// Memory is the memory one extraction may use, in bytes; 0 means no limit.
	Memory int64
	// Logger receives the reasons of failed extractions (discarded if nil).
	Logger *slog.Logger
}

// Extract extracts the file read from r in a child process. It returns what extract.Extract
// returns there, an *extract.Error with a readable message when the child is stopped by a limit
// or fails, or a wrapped context error when ctx ends first (the child is then killed).
func (x *Extractor) Extract(ctx context.Context, filename string, r io.Reader, size int64) (extract.Document, error) {
	log := x.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The name=value form keeps a file name that starts with "-" a value.
	args := append(slices.Clone(x.Args), "-name="+filename, "-size="+strconv.FormatInt(size, 10),
		"-cpu="+x.CPU.String(), "-memory="+strconv.FormatInt(x.Memory, 10))
	if deadline, ok := ctx.Deadline(); ok {
		// The child's own deadline replaces extract's default one. It comes a little after
		// ours: the kill at our deadline is what stops the child, and it tells the caller why.
		args = append(args, "-timeout="+(time.Until(deadline)+childGrace).String())
	}
	// On Linux the child dies with the OS thread that started it (see childAttr): keep this
	// goroutine on that thread, and the thread alive, until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, x.Path, args...)
	cmd.SysProcAttr = childAttr()
	cmd.Env = x.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	out := &limitedBuffer{max: maxResult}
	errs := &headtail.Buffer{Max: stderrKept}
	cmd.Stdout, cmd.Stderr = out, errs
	// The input is copied by a goroutine of ours rather than by exec, which would wait for the
	// copy to end: a stalled reader would then hold the caller past the child's death. Ours
	// ends when the reader returns.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return extract.Document{}, fmt.Errorf("extract %s: %w", filename, err)
	}
	cmd.WaitDelay = time.Second
	start := time.Now()
	if err = cmd.Start(); err != nil {
		log.WarnContext(ctx, "extraction process failed", "file", filename, "error", err)
		return extract.Document{}, &extract.Error{Kind: extract.KindCorrupt, Message: msgStart}
	}
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdin, sourceReader{r})
		stdin.Close()
		copied <- err
	}()
	err = cmd.Wait()
	if ctx.Err() != nil {
		return extract.Document{}, fmt.Errorf("extract %s: %w", filename, context.Cause(ctx))
	}
	if err == nil {
		// The child read its input to the end, or stopped early by itself (an unsupported
		// type): either way the copy is over or fails at once on the closed pipe. Only a read
		// error of the source matters; the child may have extracted a truncated file.
		var cerr error
		select {
		case cerr = <-copied:
		case <-ctx.Done():
			return extract.Document{}, fmt.Errorf("extract %s: %w", filename, context.Cause(ctx))
		}
		var se sourceError
		if errors.As(cerr, &se) {
			return extract.Document{}, fmt.Errorf("extract: read: %w", se.err)
		}
	}
	fail := func(kind, msg string, attrs ...any) (extract.Document, error) {
		attrs = append(attrs, "file", filename, "error", err, "stderr", errs.String(),
			"duration_ms", time.Since(start).Milliseconds())
		log.WarnContext(ctx, "extraction process failed", attrs...)
		return extract.Document{}, &extract.Error{Kind: kind, Message: msg}
	}
	var ee *exec.ExitError
	switch {
	case out.overflow:
		return fail(extract.KindCorrupt, msgInvalid, "result_bytes", out.Len())
	case errors.As(err, &ee):
		ps := ee.ProcessState
		used := ps.UserTime() + ps.SystemTime()
		switch {
		case x.CPU > 0 && ps.ExitCode() == -1 && used >= x.CPU:
			return fail(extract.KindTooLarge, fmt.Sprintf("The file could not be parsed within the CPU time limit of %s.", x.CPU),
				"cpu_ms", used.Milliseconds())
		case x.Memory > 0 && outOfMemory(errs.String()):
			return fail(extract.KindTooLarge, fmt.Sprintf("The file could not be parsed within the memory limit of %d MB.", x.Memory>>20))
		}
		return fail(extract.KindCorrupt, msgCrashed, "cpu_ms", used.Milliseconds())
	case err != nil:
		return fail(extract.KindCorrupt, msgInvalid)
	}
	var res result
	if derr := gob.NewDecoder(&out.Buffer).Decode(&res); derr != nil {
		err = derr
		return fail(extract.KindCorrupt, msgInvalid)
	}
	switch {
	case res.ErrKind != "":
		return extract.Document{}, &extract.Error{Kind: res.ErrKind, Message: res.ErrMessage}
	case res.Failure != "":
		err = errors.New(res.Failure)
		return fail(extract.KindCorrupt, msgCrashed)
	}
	return extract.Document{Text: res.Text, Parts: res.Parts, Pages: res.Pages, Truncated: res.Truncated}, nil
}

// outOfMemory reports whether a Go crash report says the heap could not grow. A binary built
// with the race detector reports the same exhaustion of its address space as "address space
// collisions".
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "address space collisions"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// Main is the child side: it takes its limits from args (as Extractor passes them), applies
// them to its own process, extracts the file read from stdin and writes the result on stdout.
// It returns the process exit code; an extraction error is a result, not a failure.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "file name (its extension picks the extractor)")
	size := fs.Int64("size", -1, "declared file size in bytes (-1: unknown)")
	cpu := fs.Duration("cpu", 0, "CPU time limit (0: none)")
	memory := fs.Int64("memory", 0, "memory limit in bytes (0: none)")
	timeout := fs.Duration("timeout", 0, "wall-clock limit (0: extract's default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := rlimit.Apply(rlimit.Limits{CPU: *cpu, Memory: *memory}); err != nil {
		fmt.Fprintln(stderr, "extract: limits:", err)
		return 1
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	doc, err := extract.Extract(ctx, *name, stdin, *size)
	res := result{Text: doc.Text, Parts: doc.Parts, Pages: doc.Pages, Truncated: doc.Truncated}
	var xe *extract.Error
	switch {
	case errors.As(err, &xe):
		res.ErrKind, res.ErrMessage = xe.Kind, xe.Message
	case err != nil:
		res.Failure = err.Error()
	}
	w := bufio.NewWriter(stdout)
	if err := gob.NewEncoder(w).Encode(&res); err != nil {
		fmt.Fprintln(stderr, "extract: write result:", err)
		return 1
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "extract: write result:", err)
		return 1
	}
	return 0
}

// sourceReader marks the errors of the reader it wraps, to tell them from write errors.
type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = sourceError{err}
	}
	return n, err
}

type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }

// limitedBuffer keeps up to max bytes and fails the writes beyond.
type limitedBuffer struct {
	bytes.Buffer
	max      int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		b.overflow = true
		return 0, errors.New("sandbox: result too large")
	}
	return b.Buffer.Write(p)
}
