package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// These tests speak HTTP/1.1 over a raw TCP connection, because what they check is what the
// server does with the bytes on the wire: which requests it parses, which responses it sends,
// when it closes the connection.

// rawConn is a TCP connection to the server under test.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, p *Parley) *rawConn {
	t.Helper()
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Bounds every read below: a server that keeps the connection open fails the test
	// instead of hanging it.
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes b in the background (the server may answer, and stop reading, before the
// client has sent everything); the returned channel gets the write error.
func (rc *rawConn) send(b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := rc.c.Write(b)
		done <- err
	}()
	return done
}

// responses reads responses until the server closes the connection (or the deadline passes,
// which fails the test) and returns their statuses and error bodies.
func (rc *rawConn) responses() []rawResponse {
	rc.t.Helper()
	var out []rawResponse
	for {
		resp, err := http.ReadResponse(rc.br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				rc.t.Fatalf("the server kept the connection open after %d responses", len(out))
			}
			return out
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e apiErr
		_ = json.Unmarshal(body, &e)
		out = append(out, rawResponse{status: resp.StatusCode, err: e, close: resp.Close})
	}
}

type rawResponse struct {
	status int
	err    apiErr
	close  bool
}

// chunked frames payload as one chunk, then the last chunk.
func chunked(payload []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%x\r\n", len(payload))
	b.Write(payload)
	b.WriteString("\r\n0\r\n\r\n")
	return b.Bytes()
}

// TestOversizedBodySmugglesNothing sends bodies that overrun the cap and carry pipelined
// requests inside them. Only the one real request may be answered, with 413, and the server
// must then close the connection: were it to go on parsing the rest of the body as requests,
// a proxy that reuses upstream connections would have its response queue poisoned and its
// auth and rate limits bypassed.
func TestOversizedBodySmugglesNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		kc := newClient(t, p, p.KnowledgeKey)
		ds := mustDataset(t, kc, client.CreateDatasetJSONRequestBody{Name: "smuggle"})
		base, err := url.Parse(p.URL)
		if err != nil {
			t.Fatal(err)
		}
		smuggled := []byte("GET " + base.Path + "/info HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + p.AppKey + "\r\n\r\n")
		// A JSON body a little over the default cap (1 MiB), then the pipelined requests:
		// several hundred KiB of them, more than net/http drains after a handler.
		jsonBody := func() []byte {
			var b bytes.Buffer
			b.WriteString(`{"query":"` + strings.Repeat("a", 1<<20) + `","inputs":{},"user":"u"}`)
			for b.Len() < (1<<20)+600<<10 {
				b.Write(smuggled)
			}
			return b.Bytes()
		}()
		form, formType := func() ([]byte, string) {
			var b bytes.Buffer
			w := multipart.NewWriter(&b)
			_ = w.WriteField("user", "u")
			fw, _ := w.CreateFormFile("file", "big.txt")
			// Over the largest upload limit the conformance server has (20 MB).
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 21 {
				fw.Write(chunk)
			}
			for range 4000 {
				fw.Write(smuggled)
			}
			w.Close()
			return b.Bytes(), w.FormDataContentType()
		}()
		cases := []struct {
			name, path, key, contentType string
			body                         []byte
			wantCode                     string
		}{
			{"chat", "/chat-messages", p.AppKey, "application/json", jsonBody, "request_entity_too_large"},
			{"retrieve", "/datasets/" + ds.Id.String() + "/retrieve", p.KnowledgeKey, "application/json", jsonBody, "request_entity_too_large"},
			{"upload", "/files/upload", p.AppKey, formType, form, "file_too_large"},
		}
		for _, c := range cases {
			for _, framing := range []string{"chunked", "length"} {
				t.Run(c.name+"/"+framing, func(t *testing.T) {
					rc := dialRaw(t, p)
					head := "POST " + base.Path + c.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + c.key +
						"\r\nContent-Type: " + c.contentType + "\r\n"
					var req []byte
					if framing == "chunked" {
						req = append([]byte(head+"Transfer-Encoding: chunked\r\n\r\n"), chunked(c.body)...)
					} else {
						req = append([]byte(head+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(c.body))), c.body...)
					}
					rc.send(req)
					got := rc.responses()
					if len(got) != 1 {
						t.Fatalf("got %d responses to one request (statuses %v); the body was parsed as requests", len(got), statuses(got))
					}
					if got[0].status != http.StatusRequestEntityTooLarge || got[0].err.Code != c.wantCode {
						t.Fatalf("got %d %q, want 413 %s", got[0].status, got[0].err.Code, c.wantCode)
					}
					if !got[0].close {
						t.Error("the 413 does not announce Connection: close")
					}
				})
			}
		}
		// Requests that fit still share a connection (keep-alive is not simply off).
		rc := dialRaw(t, p)
		rc.send(bytes.Repeat(smuggled, 3))
		one := rc.br
		for i := range 3 {
			resp, err := http.ReadResponse(one, nil)
			if err != nil {
				t.Fatalf("pipelined request %d: %v", i+1, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("pipelined request %d: status %d", i+1, resp.StatusCode)
			}
		}
	})
}

func statuses(rs []rawResponse) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.status
	}
	return out
}

// TestSlowBody: a client that trickles its body runs out of time and gets 408 with the
// connection closed; a slow client that keeps to the minimum rate is served; and the body's
// deadline does not reach a stream that lasts longer than it.
func TestSlowBody(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		// 1 s for a body, plus a second for every 500 bytes.
		p.Restart(t, "PARLEY_BODY_TIMEOUT=1s", "PARLEY_BODY_MIN_RATE=500")
		base, _ := url.Parse(p.URL)
		body := []byte(`{"query":"slow","inputs":{"tone":"warm"},"user":"` + strings.Repeat("u", 1900) + `"}`)
		head := "POST " + base.Path + "/chat-messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + p.AppKey +
			"\r\nContent-Type: application/json\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))

		t.Run("trickle", func(t *testing.T) {
			rc := dialRaw(t, p)
			if _, err := rc.c.Write([]byte(head)); err != nil {
				t.Fatal(err)
			}
			// Ten bytes a second: far below the minimum rate. The writer stops at the first
			// failed write, or when the test ends.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for _, b := range body {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					if _, err := rc.c.Write([]byte{b}); err != nil {
						return
					}
				}
			}()
			got := rc.responses()
			if len(got) != 1 || got[0].status != http.StatusRequestTimeout || got[0].err.Code != "request_timeout" {
				t.Fatalf("got %+v, want one 408 request_timeout", got)
			}
		})

		t.Run("slow but steady", func(t *testing.T) {
			rc := dialRaw(t, p)
			rc.c.Write([]byte(head))
			// 200 bytes every 100 ms (2,000 B/s, four times the minimum rate): about a second
			// for the body, more than the bare 1 s allowance.
			go func() {
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for rest := body; len(rest) > 0; {
					<-tick.C
					n := min(200, len(rest))
					if _, err := rc.c.Write(rest[:n]); err != nil {
						return
					}
					rest = rest[n:]
				}
			}()
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
		})

		t.Run("stream outlives the body deadline", func(t *testing.T) {
			m := marker(t, "slow-stream")
			upstream.On(m, openaitest.Reply{Chunks: []string{"one", " two", " three"}, ChunkDelay: 700 * time.Millisecond})
			evs := streamEvents(t, newClient(t, p, p.AppKey), chatBody(m, "slow-stream-user", true))
			if last := eventName(t, evs[len(evs)-1]); last != "message_end" {
				t.Fatalf("the stream ended with %q, want message_end", last)
			}
		})
	})
}

// TestStalledReaderReleasesTheRun: a client that opens a stream and then stops reading, with
// the connection left open, must not hold the run (and its concurrency slot) for ever. Once the
// socket buffers are full, a write that makes no progress within PARLEY_STREAM_WRITE_TIMEOUT
// ends the stream; the run goes on without it and stores the whole answer.
func TestStalledReaderReleasesTheRun(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		p.Restart(t, "PARLEY_STREAM_WRITE_TIMEOUT=1s")
		m := marker(t, "stalled")
		// About 8 MB of events: more than the socket buffers of both ends hold.
		chunks := make([]string, 8000)
		for i := range chunks {
			chunks[i] = strings.Repeat("z", 1023) + " "
		}
		upstream.On(m, openaitest.Reply{Chunks: chunks})
		user := "stalled-user"
		reqBody, _ := json.Marshal(chatBody(m, user, true))
		base, _ := url.Parse(p.URL)
		// A small receive buffer, and no reads at all: the server's writes stall.
		d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		conn, err := d.Dial("tcp", base.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s/chat-messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			base.Path, p.AppKey, len(reqBody), reqBody)

		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		deadline := time.Now().Add(45 * time.Second)
		for {
			var msgs []client.HistoryMessage
			if l, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &user}); err == nil && l.JSON200 != nil && len(l.JSON200.Data) == 1 {
				h, err := c.ListMessagesWithResponse(ctx, &client.ListMessagesParams{ConversationId: l.JSON200.Data[0].Id.String(), User: &user})
				if err == nil && h.JSON200 != nil {
					msgs = h.JSON200.Data
				}
			}
			if len(msgs) == 1 && msgs[0].Status == "normal" && len(msgs[0].Answer) == 8000*1024 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run is still held by a client that stopped reading: %d messages", len(msgs))
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
