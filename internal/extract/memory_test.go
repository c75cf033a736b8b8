package extract

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bombChildEnv names the bomb that TestBombMemoryChild extracts when the test
// binary is run again by TestBombMemory.
const bombChildEnv = "PARLEY_EXTRACT_BOMB_CHILD"

// maxBombRSSGrowth bounds the growth of the peak resident set size while one
// decompression or expansion bomb is extracted.
const maxBombRSSGrowth = 200 << 20

// bombs are the files TestBombMemory extracts, each in a fresh process so
// that its peak RSS is its own.
var bombs = map[string]func(t *testing.T) (name string, data []byte){
	// ~1 GB of text operators in one content stream.
	"pdf": func(t *testing.T) (string, []byte) { return "bomb.pdf", pdfBomb(t) },
	// A 1 MB shared string referred to by the 150 cells of two rows: about
	// 1 KB compressed, 450 MB of text for the unfixed code.
	"xlsx": func(t *testing.T) (string, []byte) { return "bomb.xlsx", buildXLSXSharedString(t, 1<<20, 150) },
}

// TestBombMemory runs each bomb's extraction in a child process (this test
// binary, restricted to TestBombMemoryChild) and checks the child's peak RSS
// growth, read from /proc/self/status before and after the extraction.
func TestBombMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc/self/status")
	}
	for kind := range bombs {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBombMemoryChild$", "-test.count=1")
			// With MADV_FREE the runtime's freed pages stay counted in
			// the resident set until the kernel reclaims them, so the
			// resident set cannot fall below its peak without the kernel
			// noticing. With the default MADV_DONTNEED it can, and VmHWM
			// (updated lazily by the kernel) may then read lower after the
			// extraction than before it.
			cmd.Env = append(os.Environ(), bombChildEnv+"="+kind, "GODEBUG=madvdontneed=0")
			out, err := cmd.CombinedOutput()
			m := regexp.MustCompile(`bomb-child: .* growth_kb=(-?\d+) .*`).FindSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Log(string(m[0]))
			growth, _ := strconv.ParseInt(string(m[1]), 10, 64)
			if growth<<10 > maxBombRSSGrowth {
				t.Fatalf("peak RSS grew by %d MB extracting the %s bomb, want at most %d MB", growth>>10, kind, maxBombRSSGrowth>>20)
			}
		})
	}
}

// TestBombMemoryChild is the child side of TestBombMemory.
func TestBombMemoryChild(t *testing.T) {
	kind := os.Getenv(bombChildEnv)
	if kind == "" {
		t.Skip("run by TestBombMemory in a child process")
	}
	name, data := bombs[kind](t)
	runtime.GC()
	before := peakRSSKB(t)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	doc, err := Extract(context.Background(), name, bytes.NewReader(data), int64(len(data)))
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	after := peakRSSKB(t)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	result := fmt.Sprintf("text=%d truncated=%v", len(doc.Text), doc.Truncated)
	if err != nil {
		result = "error=" + strings.ReplaceAll(err.Error(), " ", "_")
	}
	fmt.Printf("bomb-child: kind=%s file_bytes=%d hwm_before_kb=%d hwm_after_kb=%d growth_kb=%d wall=%s cpu=%s %s\n",
		kind, len(data), before, after, after-before, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), result)
}

// peakRSSKB returns VmHWM, the peak resident set size of this process, in kB.
func peakRSSKB(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
