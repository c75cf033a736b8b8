package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// replicas are n `parley serve` processes on one PostgreSQL database and one Redis (the test
// server, under a key prefix of the test's own), each with the keys of the chatbot and the
// limited app.
type replicas struct {
	ps         []*Parley
	limitedKey string
}

func startReplicas(t *testing.T, n int, redisURL string, extraEnv ...string) *replicas {
	t.Helper()
	if binary == "" {
		t.Skip("needs to start its own replicas")
	}
	if redisURL == "" {
		redisURL = redistest.URL()
	}
	prefix := redistest.Prefix(t)
	engine := storetest.NewEngine(t, storetest.Postgres)
	env := append([]string{"PARLEY_REDIS_URL=" + redisURL, "PARLEY_REDIS_KEY_PREFIX=" + prefix}, extraEnv...)
	r := &replicas{}
	for i := range n {
		p := newParley(engine, env...)
		if i == 0 {
			p.AppKey = p.CLI(t, "keys", "create", "--app", "chatbot")
			r.limitedKey = p.CLI(t, "keys", "create", "--app", "limited")
		} else {
			p.AppKey = r.ps[0].AppKey
		}
		p.Start(t)
		r.ps = append(r.ps, p)
	}
	return r
}

// openStream starts a streamed chat whose upstream hangs after its first chunk and returns the
// stream positioned on that first message event.
func openStream(t *testing.T, c *client.ClientWithResponses, query, user string) (*client.EventStream, client.MessageEvent) {
	t.Helper()
	upstream.On(query, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
	stream := streamChat(t, c, query, user)
	return stream, nextMessage(t, stream)
}

// streamChat sends query for user as a streamed chat and returns its event stream, closed when
// t ends. A stream that never ends fails the test at a deadline instead of hanging it.
func streamChat(t *testing.T, c *client.ClientWithResponses, query, user string) *client.EventStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	resp, err := c.SendChatMessage(ctx, nil, chatBody(query, user, true))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.NewEventStream(resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Close() })
	return stream
}

// nextMessage reads the stream's next event, which must be a `message` event.
func nextMessage(t *testing.T, stream *client.EventStream) client.MessageEvent {
	t.Helper()
	if !stream.Next() {
		t.Fatalf("stream ended: %v", stream.Err())
	}
	m, err := stream.Event().AsMessageEvent()
	if err != nil || eventName(t, stream.Event()) != "message" {
		t.Fatalf("event %s: %v", eventName(t, stream.Event()), err)
	}
	return m
}

// TestStopFromAnotherReplica: a stream runs on replica A; the stop request goes to replica B,
// which answers Dify's success; the stream on A ends with message_end and history shows the
// message stopped with its partial answer.
func TestStopFromAnotherReplica(t *testing.T) {
	r := startReplicas(t, 2, "")
	a, b := newClient(t, r.ps[0], r.ps[0].AppKey), newClient(t, r.ps[1], r.ps[1].AppKey)
	ctx := context.Background()
	stream, first := openStream(t, a, marker(t, "a long tale"), "kai")

	st, err := b.StopChatMessageWithResponse(ctx, first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: "kai"})
	if err != nil || st.JSON200 == nil || st.JSON200.Result != "success" {
		t.Fatalf("stop on B: %v %d %s", err, st.StatusCode(), st.Body)
	}
	var names []string
	for stream.Next() {
		names = append(names, eventName(t, stream.Event()))
	}
	if len(names) == 0 || names[len(names)-1] != "message_end" {
		t.Fatalf("the stream on A after a stop on B: %v (%v)", names, stream.Err())
	}
	// History through B (the database is shared) shows the stopped message.
	eventually(t, "the message stopped in history", func() (bool, any) {
		h := historyOf(t, b, first.ConversationId.String(), "kai")
		return len(h) == 1 && h[0].Status == client.HistoryMessageStatusStopped && h[0].Answer == "Once", h
	})
}

// TestCapAcrossReplicas: the `limited` app admits one request at a time across both replicas:
// with a stream open on A, B refuses with 429; once the stream is stopped (from B), B admits.
func TestCapAcrossReplicas(t *testing.T) {
	r := startReplicas(t, 2, "")
	a, b := newClient(t, r.ps[0], r.limitedKey), newClient(t, r.ps[1], r.limitedKey)
	ctx := context.Background()
	_, first := openStream(t, a, marker(t, "hold the slot"), "h")
	for _, c := range []*client.ClientWithResponses{b, a} {
		res, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "second"), "i", false))
		if err != nil || res.StatusCode() != 429 || res.JSON429 == nil || res.JSON429.Code != "too_many_requests" {
			t.Fatalf("second request: %v %d %s", err, res.StatusCode(), res.Body)
		}
	}
	if _, err := b.StopChatMessageWithResponse(ctx, first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: "h"}); err != nil {
		t.Fatal(err)
	}
	admitted(t, b, "after the stop")
}

// admitted retries a blocking chat on c until it is admitted (200), failing on anything but
// a 429 meanwhile.
func admitted(t *testing.T, c *client.ClientWithResponses, what string) {
	t.Helper()
	q := marker(t, "admitted")
	upstream.On(q, openaitest.Reply{Text: "ok"})
	eventually(t, "a request admitted "+what, func() (bool, any) {
		res, err := c.SendChatMessageWithResponse(context.Background(), nil, chatBody(q, "i", false))
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode() != 200 && res.StatusCode() != 429 {
			t.Fatalf("%s: %d %s", what, res.StatusCode(), res.Body)
		}
		return res.StatusCode() == 200, string(res.Body)
	})
}

// TestKilledReplicaFreesItsSlot: replica A is killed (SIGKILL) while its stream holds the
// limited app's only slot; B refuses until the slot's lease expires, then admits.
func TestKilledReplicaFreesItsSlot(t *testing.T) {
	r := startReplicas(t, 2, "", "PARLEY_SLOT_LEASE=2s")
	a, b := newClient(t, r.ps[0], r.limitedKey), newClient(t, r.ps[1], r.limitedKey)
	ctx := context.Background()
	openStream(t, a, marker(t, "hold and die"), "h")
	res, err := b.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "second"), "i", false))
	if err != nil || res.StatusCode() != 429 {
		t.Fatalf("while A holds the slot: %v %d %s", err, res.StatusCode(), res.Body)
	}
	if err := r.ps[0].Kill(); err != nil {
		t.Fatal(err)
	}
	admitted(t, b, "after the holder was killed")
}

// probe GETs one of the server's probes (outside /v1) and decodes its body.
func probe(t *testing.T, p *Parley, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(p.URL, "/v1") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, body
}

// TestRedisOutage: a replica whose Redis goes away says so in /ready (503, redis down) while
// /health stays 200, answers API requests that need Redis with 503 service_unavailable (the
// contract's Error body, quickly), and recovers by itself when Redis is back.
func TestRedisOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	r := startReplicas(t, 1, srv.URL)
	p := r.ps[0]
	c := newClient(t, p, p.AppKey)
	ctx := context.Background()
	if code, body := probe(t, p, "/ready"); code != 200 || body["status"] != "ready" {
		t.Fatalf("/ready: %d %v", code, body)
	}

	srv.Stop()
	code, body := probe(t, p, "/ready")
	checks, _ := body["checks"].(map[string]any)
	if code != 503 || body["status"] != "unavailable" || checks["redis"] != "down" || checks["database"] != "up" {
		t.Fatalf("/ready with Redis down: %d %v", code, body)
	}
	if code, _ := probe(t, p, "/health"); code != 200 {
		t.Fatalf("/health with Redis down: %d", code)
	}
	q := marker(t, "while redis is down")
	upstream.On(q, openaitest.Reply{Text: "ok"})
	res, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "u", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != 503 || res.JSON503 == nil || res.JSON503.Code != "service_unavailable" || !strings.Contains(res.JSON503.Message, "Redis") {
		t.Fatalf("chat with Redis down: %d %s", res.StatusCode(), res.Body)
	}
	st, err := c.StopChatMessageWithResponse(ctx, "0190f5a2-6d1e-7c3b-9a4f-2b8c1d7e5f60", client.StopChatMessageJSONRequestBody{User: "u"})
	if err != nil || st.StatusCode() != 503 {
		t.Fatalf("stop with Redis down: %v %d %s", err, st.StatusCode(), st.Body)
	}
	// What does not need Redis goes on.
	if h, err := c.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{}); err != nil || h.StatusCode() != 200 {
		t.Fatalf("app info with Redis down: %v %d", err, h.StatusCode())
	}

	srv.Start(t)
	eventually(t, "/ready to recover", func() (bool, any) {
		code, body := probe(t, p, "/ready")
		return code == 200, body
	})
	admitted(t, c, "after Redis came back")
	// Stop works again across the restart: the subscription came back by itself.
	stream, first := openStream(t, c, marker(t, "after the outage"), "v")
	if _, err := c.StopChatMessageWithResponse(ctx, first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: "v"}); err != nil {
		t.Fatal(err)
	}
	var last string
	for stream.Next() {
		last = eventName(t, stream.Event())
	}
	if last != "message_end" {
		t.Fatalf("stream after stop: last event %q (%v)", last, stream.Err())
	}
}

// tcpProxy forwards a loopback port to target and can cut every connection and refuse new
// ones (down) and then listen again on the same port (up), as a database host that goes away
// and comes back.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	p.up(t)
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) up(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = struct{}{}, struct{}{}
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
}

func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// TestDatabaseOutage: a replica whose PostgreSQL goes away (every connection cut, new ones
// refused) says so in /ready (503, database down) while /health stays 200, answers API
// requests with 503 service_unavailable naming the database, and recovers by itself when the
// database is back.
func TestDatabaseOutage(t *testing.T) {
	if binary == "" {
		t.Skip("needs to start its own server")
	}
	engine := storetest.NewEngine(t, storetest.Postgres)
	u, err := url.Parse(engine.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr
	engine.DatabaseURL = u.String()
	p := newParley(engine)
	p.AppKey = p.CLI(t, "keys", "create", "--app", "chatbot")
	p.Start(t)
	c := newClient(t, p, p.AppKey)
	ctx := context.Background()
	if code, body := probe(t, p, "/ready"); code != 200 || body["status"] != "ready" {
		t.Fatalf("/ready: %d %v", code, body)
	}

	proxy.down()
	code, body := probe(t, p, "/ready")
	checks, _ := body["checks"].(map[string]any)
	if code != 503 || checks["database"] != "down" {
		t.Fatalf("/ready with the database down: %d %v", code, body)
	}
	if _, ok := checks["redis"]; ok {
		t.Fatalf("/ready checks a Redis that is not configured: %v", body)
	}
	if code, _ := probe(t, p, "/health"); code != 200 {
		t.Fatalf("/health with the database down: %d", code)
	}
	q := marker(t, "while the database is down")
	upstream.On(q, openaitest.Reply{Text: "ok"})
	res, err := c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "u", false))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != 503 || res.JSON503 == nil || res.JSON503.Code != "service_unavailable" || !strings.Contains(res.JSON503.Message, "database") {
		t.Fatalf("chat with the database down: %d %s", res.StatusCode(), res.Body)
	}
	user := "u"
	l, err := c.ListConversationsWithResponse(ctx, &client.ListConversationsParams{User: &user})
	if err != nil || l.StatusCode() != 503 {
		t.Fatalf("conversations with the database down: %v %d %s", err, l.StatusCode(), l.Body)
	}

	proxy.up(t)
	eventually(t, "/ready to recover", func() (bool, any) {
		code, body := probe(t, p, "/ready")
		return code == 200, body
	})
	res, err = c.SendChatMessageWithResponse(ctx, nil, chatBody(q, "u", false))
	if err != nil || res.StatusCode() != 200 {
		t.Fatalf("chat after the database came back: %v %d %s", err, res.StatusCode(), res.Body)
	}
}
