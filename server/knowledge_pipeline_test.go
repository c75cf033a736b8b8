package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/parleyhq/parley/internal/store"
)

func TestZipEntryName(t *testing.T) {
	seen := map[string]int{}
	for _, tc := range []struct{ in, want string }{
		{"notes.txt", "notes.txt"},
		{"Notes.TXT", "Notes (2).TXT"},
		{"notes.txt", "notes (3).txt"},
		{"notes (4).txt", "notes (4).txt"},
		{"notes.txt", "notes (5).txt"},
		{"../../etc/passwd", "passwd"},
		{`dir\evil.md`, "dir_evil.md"},
		{"", "file"},
		{"/", "file (2)"},
		{"README", "README"},
		{"README", "README (2)"},
	} {
		if got := zipEntryName(tc.in, seen); got != tc.want {
			t.Errorf("zipEntryName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEpochFloat(t *testing.T) {
	for in, want := range map[time.Time]string{
		time.Unix(1741267200, 0):           "1741267200.0",
		time.Unix(1741267200, 500_000_000): "1741267200.5",
		time.Unix(0, 0):                    "0.0",
	} {
		if got := string(epochFloat(in)); got != want {
			t.Errorf("epochFloat(%v) = %s, want %s", in, got, want)
		}
		var f float64
		if err := json.Unmarshal(epochFloat(in), &f); err != nil {
			t.Errorf("not a JSON number: %v", err)
		}
	}
}

func TestRemoteFilename(t *testing.T) {
	for in, want := range map[string]string{
		"https://x.test/pics/cat.png":        "cat.png",
		"https://x.test/pics/cat.png?size=2": "cat.png",
		"https://x.test/pics/":               "pics",
		"https://x.test":                     "",
		"https://x.test/a%20b.png":           "a b.png",
		"::not a url":                        "",
	} {
		if got := remoteFilename(in); got != want {
			t.Errorf("remoteFilename(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDifyAutomaticRules(t *testing.T) {
	got, _ := json.Marshal(difyAutomaticRules())
	want := `{"pre_processing_rules":[{"enabled":true,"id":"remove_extra_spaces"},{"enabled":false,"id":"remove_urls_emails"}],"segmentation":{"chunk_overlap":50,"delimiter":"\n","max_tokens":500}}`
	if string(got) != want {
		t.Errorf("automatic rules = %s\nwant %s", got, want)
	}
}

// TestBinaryResponsesPassThrough: the response validator sends a file's bytes as the handler
// writes them, instead of holding the whole body: the client reads the first part while the
// handler still waits to write the rest.
func TestBinaryResponsesPassThrough(t *testing.T) {
	f := newFixture(t, ValidationEnforce)
	release := make(chan struct{})
	f.e.GET("/v1/files/tools/:file", func(c echo.Context) error {
		c.Response().Header().Set("Content-Type", "image/png")
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		c.Response().WriteHeader(http.StatusOK)
		_, _ = c.Response().Write([]byte("first\n"))
		c.Response().Flush()
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		_, _ = c.Response().Write([]byte("second\n"))
		return nil
	})
	srv := httptest.NewServer(f.e)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/files/tools/x.png?timestamp=1&nonce=n&sign=s")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if line != "first\n" {
			t.Fatalf("first part = %q", line)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the first part was held back until the handler finished")
	}
	close(release)
	rest, _ := io.ReadAll(r)
	if string(rest) != "second\n" || f.srv.Violations() != 0 {
		t.Fatalf("rest = %q, %d violations", rest, f.srv.Violations())
	}
}

// TestZipStallEnds: a client that stops reading a large archive does not hold the handler for
// ever: once the socket buffers are full, a write waits at most the stall timeout, and the
// response ends with an error.
func TestZipStallEnds(t *testing.T) {
	const size = 256 << 20 // far beyond what loopback socket buffers hold
	ended := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp := zipResponse{ctx: r.Context(), stall: 200 * time.Millisecond, log: slog.New(slog.DiscardHandler),
			files: []store.UploadFile{{ID: "a", Name: "big.bin", Size: size}},
			open: func(context.Context, store.UploadFile) (io.ReadCloser, error) {
				return io.NopCloser(io.LimitReader(zeros{}, size)), nil
			}}
		ended <- resp.VisitDownloadDocumentsZipResponse(w)
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Read nothing.
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the whole archive was written to a client that read nothing")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler is still writing to a client that stopped reading")
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// BenchmarkZipResponse streams an archive of four 16 MB files: allocations per archive stay a
// few kilobytes whatever the files' size, since nothing is buffered whole.
func BenchmarkZipResponse(b *testing.B) {
	const size = 16 << 20
	fs := make([]store.UploadFile, 4)
	for i := range fs {
		fs[i] = store.UploadFile{ID: string(rune('a' + i)), Name: "doc.bin", Size: size}
	}
	resp := zipResponse{ctx: context.Background(), stall: -1, log: slog.New(slog.DiscardHandler), files: fs,
		open: func(context.Context, store.UploadFile) (io.ReadCloser, error) {
			return io.NopCloser(io.LimitReader(zeros{}, size)), nil
		}}
	b.ReportAllocs()
	b.SetBytes(4 * size)
	for b.Loop() {
		w := httptest.NewRecorder()
		w.Body = nil
		if err := resp.VisitDownloadDocumentsZipResponse(discardWriter{w}); err != nil {
			b.Fatal(err)
		}
	}
}

// discardWriter is a ResponseWriter whose body goes nowhere.
type discardWriter struct{ *httptest.ResponseRecorder }

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
