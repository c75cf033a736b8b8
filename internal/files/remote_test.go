package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const remoteMax = 1024

// remoteServer is a file server on loopback that misbehaves on request.
// hits counts requests per path.
type remoteServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func (s *remoteServer) hitCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *remoteServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

func newRemoteServer(t *testing.T) *remoteServer {
	t.Helper()
	rs := &remoteServer{hits: make(map[string]int)}
	// Handlers that wait for the client give up when the test ends, even
	// if the client never went away, so Close cannot hang.
	stop := make(chan struct{})
	png := append(append([]byte{}, pngHead...), "…"...)

	mux := http.NewServeMux()
	mux.HandleFunc("/img/cat.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename*=UTF-8''..%2Fr%C3%A9sum%C3%A9.pdf`)
		_, _ = w.Write([]byte("%PDF-1.7\n"))
	})
	mux.HandleFunc("/blobs/photo", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no header, and no sniffing by net/http
		_, _ = w.Write(png)
	})
	mux.HandleFunc("/exact", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(bytes.Repeat([]byte("a"), remoteMax))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(remoteMax+1))
		_, _ = w.Write(bytes.Repeat([]byte("a"), remoteMax+1))
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: only counting the body catches this.
		for range 4 {
			_, _ = w.Write(bytes.Repeat([]byte("a"), remoteMax/2))
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream exploded", http.StatusInternalServerError)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/hops/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("arrived"))
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/to-ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.com/x", http.StatusFound)
	})

	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.hits[r.URL.Path]++
		rs.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	t.Cleanup(func() { close(stop) }) // runs before rs.Close
	return rs
}

func TestFetchRemote(t *testing.T) {
	t.Parallel()
	srv := newRemoteServer(t)
	svc := New(Options{AllowPrivateNetworks: true, RemoteMaxBytes: remoteMax, RemoteTimeout: 10 * time.Second})
	png := append(append([]byte{}, pngHead...), "…"...)

	for _, tc := range []struct {
		name    string
		url     string
		want    Remote
		wantErr error
		check   func(t *testing.T, err error)
	}{
		{name: "image", url: "/img/cat.png", want: Remote{Data: png, ContentType: "image/png", Filename: "cat.png"}},
		{name: "content disposition, type from its extension", url: "/download?x=1",
			want: Remote{Data: []byte("%PDF-1.7\n"), ContentType: "application/pdf", Filename: "résumé.pdf"}},
		{name: "no content type, sniffed", url: "/blobs/photo", want: Remote{Data: png, ContentType: "image/png", Filename: "photo"}},
		{name: "exactly the cap", url: "/exact", want: Remote{Data: bytes.Repeat([]byte("a"), remoteMax), ContentType: "text/plain", Filename: "exact"}},
		{name: "five redirects", url: "/hops/5", want: Remote{Data: []byte("arrived"), ContentType: "text/plain", Filename: "0"}},

		{name: "too large by Content-Length", url: "/big", wantErr: ErrTooLarge, check: wantTooLarge(remoteMax, "")},
		{name: "too large while reading", url: "/big-chunked", wantErr: ErrTooLarge, check: wantTooLarge(remoteMax, "")},
		{name: "404", url: "/missing", wantErr: ErrRemoteFetch, check: wantStatus(http.StatusNotFound)},
		{name: "500", url: "/broken", wantErr: ErrRemoteFetch, check: wantStatus(http.StatusInternalServerError)},
		{name: "six redirects", url: "/hops/6", wantErr: ErrRemoteFetch},
		{name: "redirect loop", url: "/loop", wantErr: ErrRemoteFetch, check: func(t *testing.T, err error) {
			// The first request and five redirects, then it stops.
			if n := srv.hitCount("/loop"); n != 1+MaxRedirects {
				t.Errorf("/loop requested %d times, want %d", n, 1+MaxRedirects)
			}
		}},
		{name: "redirect to ftp", url: "/to-ftp", wantErr: ErrRemoteFetch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := svc.FetchRemote(t.Context(), srv.URL+tc.url)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if tc.check != nil {
					tc.check(t, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Data, tc.want.Data) || got.ContentType != tc.want.ContentType || got.Filename != tc.want.Filename {
				t.Errorf("got %q, %q, %d bytes; want %q, %q, %d bytes",
					got.ContentType, got.Filename, len(got.Data), tc.want.ContentType, tc.want.Filename, len(tc.want.Data))
			}
		})
	}
}

func wantStatus(code int) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != code {
			t.Errorf("err = %v, want *StatusError %d", err, code)
		}
	}
}

func TestFetchRemoteTimeout(t *testing.T) {
	t.Parallel()
	srv := newRemoteServer(t)
	svc := New(Options{AllowPrivateNetworks: true, RemoteTimeout: 100 * time.Millisecond})
	_, err := svc.FetchRemote(t.Context(), srv.URL+"/slow")
	if !errors.Is(err, ErrRemoteFetch) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrRemoteFetch and context.DeadlineExceeded", err)
	}
}

func TestFetchRemoteCallerCancel(t *testing.T) {
	t.Parallel()
	srv := newRemoteServer(t)
	svc := New(Options{AllowPrivateNetworks: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := svc.FetchRemote(ctx, srv.URL+"/slow")
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrRemoteFetch) {
		t.Fatalf("err = %v, want context.Canceled and not ErrRemoteFetch", err)
	}
}

func TestFetchRemoteInvalidURL(t *testing.T) {
	t.Parallel()
	svc := New(Options{AllowPrivateNetworks: true})
	for _, raw := range []string{
		"", "not a url", "/relative/path", "//example.com/a.png", "ftp://example.com/a.png",
		"file:///etc/passwd", "gopher://example.com/", "http://", "https:///a.png", "http://:80/a.png", "http://[::1/",
	} {
		if _, err := svc.FetchRemote(t.Context(), raw); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("FetchRemote(%q) err = %v, want ErrInvalidURL", raw, err)
		}
	}
}

// TestFetchRemoteRefusesLoopback runs the default guard against a server
// on 127.0.0.1: the literal address and a name resolving to it are both
// refused at dial time, and the server never sees a request.
func TestFetchRemoteRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv := newRemoteServer(t)
	svc := New(Options{})
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		srv.URL + "/img/cat.png",
		"http://localhost:" + u.Port() + "/img/cat.png",
	} {
		_, err := svc.FetchRemote(t.Context(), raw)
		if !errors.Is(err, ErrRemoteForbidden) {
			t.Errorf("FetchRemote(%s) err = %v, want ErrRemoteForbidden", raw, err)
		}
	}
	if n := srv.total(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewHTTPClient(t *testing.T) {
	t.Parallel()
	custom := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("unused")
	})}
	t.Run("guard needs an http.Transport", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "network guard") {
				t.Errorf("recover() = %v, want a panic about the network guard", r)
			}
		}()
		New(Options{HTTPClient: custom})
	})
	t.Run("used as is when private networks are allowed", func(t *testing.T) {
		svc := New(Options{HTTPClient: custom, AllowPrivateNetworks: true})
		if _, err := svc.FetchRemote(t.Context(), "http://example.com/a"); !errors.Is(err, ErrRemoteFetch) || !strings.Contains(err.Error(), "unused") {
			t.Errorf("err = %v, want the custom transport's error", err)
		}
	})
	t.Run("caller's transport cloned, not changed", func(t *testing.T) {
		base := &http.Transport{Proxy: http.ProxyFromEnvironment}
		New(Options{HTTPClient: &http.Client{Transport: base}})
		if base.DialContext != nil || base.Proxy == nil {
			t.Error("New modified the caller's transport")
		}
	})
}
