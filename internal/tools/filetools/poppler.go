package filetools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/headtail"
)

// popplerPrograms are the programs of Debian's poppler-utils the PDF tools run.
var popplerPrograms = []string{"pdfinfo", "pdftoppm", "pdfseparate", "pdfunite"}

// errNoPoppler: the programs are not installed.
var errNoPoppler = errors.New("the PDF tools need poppler-utils (pdfinfo, pdftoppm, pdfseparate, pdfunite) and prlimit installed on the server")

// popplerJob is a work directory holding one PDF (in.pdf), where poppler's programs run.
type popplerJob struct {
	s   *Set
	dir string
}

// newPopplerJob writes data to a new work directory.
func (s *Set) newPopplerJob(data []byte) (*popplerJob, error) {
	dir, err := os.MkdirTemp("", "parley-pdf-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "in.pdf"), data, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &popplerJob{s: s, dir: dir}, nil
}

// close removes the work directory.
func (j *popplerJob) close() { os.RemoveAll(j.dir) }

// pagesRE finds the page count in pdfinfo's report.
var pagesRE = regexp.MustCompile(`(?m)^Pages:\s+(\d+)\s*$`)

// pageCount is the PDF's number of pages, as pdfinfo reads it.
func (j *popplerJob) pageCount(ctx context.Context) (int, error) {
	out, err := j.output(ctx, "pdfinfo", "in.pdf")
	if err != nil {
		return 0, err
	}
	m := pagesRE.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("no page count was found")
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		return 0, fmt.Errorf("page count %s: %w", m[1], err)
	}
	return n, nil
}

// pageSizeRE finds a page's size in pdfinfo's report of pages.
var pageSizeRE = regexp.MustCompile(`(?m)^Page\s+(\d+) size:\s+([0-9.]+) x ([0-9.]+) pts`)

// pageSizes is the size of each page, in points, as pdfinfo reads it.
func (j *popplerJob) pageSizes(ctx context.Context, pages int) ([][2]float64, error) {
	out, err := j.output(ctx, "pdfinfo", "-f", "1", "-l", strconv.Itoa(pages), "in.pdf")
	if err != nil {
		return nil, err
	}
	sizes := make([][2]float64, pages)
	for _, m := range pageSizeRE.FindAllSubmatch(out, -1) {
		n, err1 := strconv.Atoi(string(m[1]))
		w, err2 := strconv.ParseFloat(string(m[2]), 64)
		h, err3 := strconv.ParseFloat(string(m[3]), 64)
		if err1 != nil || err2 != nil || err3 != nil || n < 1 || n > pages {
			continue
		}
		sizes[n-1] = [2]float64{w, h}
	}
	for i, sz := range sizes {
		if sz[0] <= 0 || sz[1] <= 0 {
			return nil, fmt.Errorf("the size of page %d was not found", i+1)
		}
	}
	return sizes, nil
}

// run runs program with args in the work directory.
func (j *popplerJob) run(ctx context.Context, program string, args ...string) error {
	_, err := j.output(ctx, program, args...)
	return err
}

// Bounds of what one poppler program's run keeps of its output.
const (
	popplerStdout = 64 << 10
	popplerStderr = 4 << 10
)

// output runs program with args in the work directory and returns what it printed (its first
// popplerStdout bytes). The program runs under prlimit, which holds it to the Set's CPU time,
// address space, file size and open files, without core dumps; with an empty environment; in a
// process group of its own that is killed when ctx ends or PDFTimeout passes, and (on Linux)
// when the server dies. A failure is worded from the program's last line of complaint.
func (j *popplerJob) output(ctx context.Context, program string, args ...string) ([]byte, error) {
	path, err := j.s.popplerPath(program)
	if err != nil {
		return nil, err
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, errNoPoppler
	}
	o := &j.s.o
	cpu := max(1, int64((o.PDFCPU+time.Second-1)/time.Second))
	limits := []string{
		"--cpu=" + strconv.FormatInt(cpu, 10),
		"--as=" + strconv.FormatInt(o.PDFMemory, 10),
		"--fsize=" + strconv.Itoa(o.MaxDecodedBytes+1),
		"--nofile=64",
		"--core=0",
		"--",
	}
	runCtx, cancel := context.WithTimeout(ctx, o.PDFTimeout)
	defer cancel()
	// On Linux the child dies with the OS thread that started it (see procAttr): hold this
	// goroutine on that thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(runCtx, prlimit, append(append(limits, path), args...)...)
	cmd.Dir = j.dir
	cmd.Env = []string{}
	cmd.SysProcAttr = procAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = time.Second
	stdout := &limitedOutput{max: popplerStdout}
	stderr := &headtail.Buffer{Max: popplerStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	switch {
	case err == nil && strings.Contains(stderr.String(), "Bogus memory allocation size"):
		// poppler's answer to a bitmap it will not allocate: a 1×1 image, and success.
		return nil, errors.New("a page is too large to render")
	case err == nil:
		return stdout.b, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case runCtx.Err() != nil:
		return nil, fmt.Errorf("the PDF took longer than the %v allowed", o.PDFTimeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if !exit.Exited() {
			// Killed: by the kernel at the CPU limit, or for memory it could not get.
			return nil, errors.New("the PDF needs more time or memory than this server allows")
		}
		if line := lastLine(stderr.String()); line != "" {
			return nil, errors.New(line)
		}
		return nil, fmt.Errorf("%s failed (exit status %d)", program, exit.ExitCode())
	}
	return nil, fmt.Errorf("%s: %w", program, err)
}

// popplerPath is the path of one of poppler's programs: in PopplerDir, or on the PATH.
func (s *Set) popplerPath(program string) (string, error) {
	name := program
	if s.o.PopplerDir != "" {
		name = filepath.Join(s.o.PopplerDir, program)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", errNoPoppler
	}
	return path, nil
}

// lastLine is the last non-empty line of text.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// limitedOutput keeps the first max bytes written and drops the rest.
type limitedOutput struct {
	b   []byte
	max int
}

func (w *limitedOutput) Write(p []byte) (int, error) {
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
