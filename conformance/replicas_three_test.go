package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// rrProxy is a plain round-robin load balancer in front of the replicas: every request goes to
// the next replica in turn, with no affinity of any kind. It names each request it forwards
// (X-Request-Id, which the replicas log on their access-log line and send back) and remembers
// the replica it sent it to. A replica taken out of rotation (down), as a load balancer's
// health check would, gets nothing more.
type rrProxy struct {
	srv      *httptest.Server
	backends []*url.URL
	mu       sync.Mutex
	next     int
	n        int
	down     map[int]bool
	sentTo   map[string]int
}

func newRRProxy(t *testing.T, ps []*Parley) *rrProxy {
	t.Helper()
	p := &rrProxy{down: map[int]bool{}, sentTo: map[string]int{}}
	for _, r := range ps {
		u, err := url.Parse(strings.TrimSuffix(r.URL, "/v1"))
		if err != nil {
			t.Fatal(err)
		}
		p.backends = append(p.backends, u)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			p.mu.Lock()
			i := p.pickLocked()
			p.n++
			id := fmt.Sprintf("rr-%d", p.n)
			p.sentTo[id] = i
			p.mu.Unlock()
			pr.SetURL(p.backends[i])
			pr.Out.Header.Set("X-Request-Id", id)
		},
		FlushInterval: -1, // event streams pass through as they are written
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	return p
}

// pickLocked returns the next replica in rotation and moves past it.
func (p *rrProxy) pickLocked() int {
	for {
		i := p.next % len(p.backends)
		p.next++
		if !p.down[i] {
			return i
		}
	}
}

// peek is the replica the next request will go to.
func (p *rrProxy) peek() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for j := p.next; ; j++ {
		if i := j % len(p.backends); !p.down[i] {
			return i
		}
	}
}

func (p *rrProxy) setDown(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down[i] = true
}

// replicaOf is the replica the request with this id (from the response's X-Request-Id) went to.
func (p *rrProxy) replicaOf(t *testing.T, id string) int {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.sentTo[id]
	if !ok {
		t.Fatalf("the proxy never forwarded a request %q", id)
	}
	return i
}

// steer sends liveness probes through the proxy until the next request goes to a replica
// that satisfies want: the rotation itself is never bypassed.
func (p *rrProxy) steer(t *testing.T, want func(int) bool) {
	t.Helper()
	for range 2 * len(p.backends) {
		if want(p.peek()) {
			return
		}
		resp, err := http.Get(p.srv.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Fatal("no replica in rotation satisfies the steering condition")
}

// loggedRequest says whether replica p's access log has a line for request id on route.
func loggedRequest(p *Parley, id, route string) bool {
	for _, line := range strings.Split(p.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == id &&
			(route == "" || rec["route"] == route) {
			return true
		}
	}
	return false
}

// tryStream sends a streamed chat whose upstream hangs after its first chunk. Admitted, it
// returns the stream on its first message event; refused, the status (which must be a 429
// too_many_requests). The request id is the one the proxy gave it.
func tryStream(t *testing.T, c *client.ClientWithResponses, query, user string) (status int, id string, stream *client.EventStream, first client.MessageEvent, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	resp, err := c.SendChatMessage(ctx, nil, chatBody(query, user, true))
	if err != nil {
		return 0, "", nil, first, err
	}
	id = resp.Header.Get("X-Request-Id")
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e client.Error
		if resp.StatusCode != 429 || json.Unmarshal(raw, &e) != nil || e.Code != "too_many_requests" {
			return resp.StatusCode, id, nil, first, fmt.Errorf("refused with %d %s", resp.StatusCode, raw)
		}
		return resp.StatusCode, id, nil, first, nil
	}
	stream, err = client.NewEventStream(resp)
	if err != nil {
		return 0, id, nil, first, err
	}
	t.Cleanup(func() { stream.Close() })
	if !stream.Next() {
		return 0, id, nil, first, fmt.Errorf("no first event: %v", stream.Err())
	}
	first, err = stream.Event().AsMessageEvent()
	return 200, id, stream, first, err
}

// TestThreeReplicas is the proof of the many-replica deployment (docs/replicas.md): three
// `parley serve` processes, each with its own data directory, on one PostgreSQL database and
// one Redis, behind a round-robin proxy without sticky sessions; every request of the test
// goes through the proxy except the last searches, made on each replica directly. It checks:
//
//   - the global cap: the chatbot app admits N = 3 requests at a time; of N+3 concurrent
//     streams exactly N stream and the rest get 429, and the streams run on more than one
//     replica (the access logs carry the proxy's request ids);
//   - stop: each stream is stopped through the proxy by a request that lands on another
//     replica than the one running it, and ends with message_end, stored as stopped;
//   - human input: a Chatflow pauses through the proxy; its events operation, opened through
//     the proxy, streams the run to workflow_finished once the form is submitted through the
//     proxy on another replica than the one that paused it;
//   - a dataset indexed through the proxy is searchable (semantic retrieval) on every replica;
//   - kill -9: the replica indexing a large document and running a stream that holds the
//     limited app's only slot is killed; the document is indexed by another replica once the
//     job lease expires, the message ends stored as interrupted with its answer so far, the
//     slot frees itself when its lease expires, and no job is left.
func TestThreeReplicas(t *testing.T) {
	if binary == "" {
		t.Skip("needs to start servers of its own")
	}
	const capN, extra = 3, 3
	prefix := redistest.Prefix(t)
	engine := storetest.NewEngine(t, storetest.Postgres)
	env := []string{
		"PARLEY_REDIS_URL=" + redistest.URL(), "PARLEY_REDIS_KEY_PREFIX=" + prefix,
		fmt.Sprintf("APP_DEFAULT_ACTIVE_REQUESTS=%d", capN),
		// A dead replica's slots, jobs and runs are released within seconds.
		"PARLEY_SLOT_LEASE=2s", "PARLEY_JOB_LEASE=3s", "PARLEY_RUN_STALE_AFTER=2s",
		// The name each replica's jobs are leased under is logged at debug level.
		"PARLEY_LOG_LEVEL=debug",
	}
	var ps []*Parley
	for i := range 3 {
		p := newParley(engine, env...)
		if i == 0 {
			p.AppKey = p.CLI(t, "keys", "create", "--app", "chatbot")
			p.KnowledgeKey = p.CLI(t, "keys", "create", "--knowledge")
		} else {
			// Its own data directory, as on another machine.
			dir := t.TempDir()
			for j, kv := range p.env {
				if strings.HasPrefix(kv, "PARLEY_DATA_DIR=") {
					p.env[j] = "PARLEY_DATA_DIR=" + dir
				}
			}
			p.AppKey, p.KnowledgeKey = ps[0].AppKey, ps[0].KnowledgeKey
		}
		p.Start(t)
		ps = append(ps, p)
	}
	limitedKey := ps[0].CLI(t, "keys", "create", "--app", "limited")
	hiKey := exampleApp(t, ps[0], "../docs/examples/chatflow-review.yml", "Review Desk", "Review Desk Three Replicas")
	lb := newRRProxy(t, ps)
	front := &Parley{URL: lb.srv.URL + "/v1", AppKey: ps[0].AppKey, KnowledgeKey: ps[0].KnowledgeKey}
	chat, know, limited := newClient(t, front, front.AppKey), newClient(t, front, front.KnowledgeKey), newClient(t, front, limitedKey)
	ctx := context.Background()

	// (a) The global cap: N+k concurrent streams, exactly N admitted.
	type attempt struct {
		status int
		id     string
		stream *client.EventStream
		first  client.MessageEvent
		err    error
	}
	attempts := make([]attempt, capN+extra)
	var wg sync.WaitGroup
	for i := range attempts {
		q := marker(t, fmt.Sprintf("capped stream %d", i))
		upstream.On(q, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &attempts[i]
			a.status, a.id, a.stream, a.first, a.err = tryStream(t, chat, q, "cap")
		}()
	}
	wg.Wait()
	var open []attempt
	refused := 0
	for i, a := range attempts {
		if a.err != nil {
			t.Fatalf("stream %d: %v", i, a.err)
		}
		switch a.status {
		case 200:
			open = append(open, a)
		case 429:
			refused++
		}
	}
	if len(open) != capN || refused != extra {
		t.Fatalf("%d concurrent streams under a cap of %d: %d streaming, %d refused", capN+extra, capN, len(open), refused)
	}
	ran := map[int]bool{}
	for _, a := range open {
		ran[lb.replicaOf(t, a.id)] = true
	}
	if len(ran) < 2 {
		t.Fatalf("the %d admitted streams all ran on one replica: %v", capN, ran)
	}

	// (b) Stop through the proxy, each landing on another replica than the stream's.
	for _, a := range open {
		owner := lb.replicaOf(t, a.id)
		lb.steer(t, func(i int) bool { return i != owner })
		st, err := chat.StopChatMessageWithResponse(ctx, a.first.TaskId.String(), client.StopChatMessageJSONRequestBody{User: "cap"})
		if err != nil || st.JSON200 == nil || st.JSON200.Result != "success" {
			t.Fatalf("stop: %v %d %s", err, st.StatusCode(), st.Body)
		}
		if by := lb.replicaOf(t, st.HTTPResponse.Header.Get("X-Request-Id")); by == owner {
			t.Fatalf("the stop went to replica %d, which runs the stream", by)
		}
		var last string
		for a.stream.Next() {
			last = eventName(t, a.stream.Event())
		}
		if last != "message_end" {
			t.Fatalf("stream on replica %d after a stop on another: last event %q (%v)", owner, last, a.stream.Err())
		}
		eventually(t, "the stopped message in history", func() (bool, any) {
			h := historyOf(t, chat, a.first.ConversationId.String(), "cap")
			return len(h) == 1 && h[0].Status == client.HistoryMessageStatusStopped && h[0].Answer == "Once", h
		})
	}
	// Each replica's own access log shows the streams the proxy says it sent there.
	for _, a := range open {
		owner := lb.replicaOf(t, a.id)
		eventually(t, "the stream's access-log line on its replica", func() (bool, any) {
			return loggedRequest(ps[owner], a.id, "/v1/chat-messages"), a.id
		})
		for i, p := range ps {
			if i != owner && loggedRequest(p, a.id, "") {
				t.Fatalf("request %s logged by replica %d too (sent to %d)", a.id, i, owner)
			}
		}
	}
	admitted(t, chat, "after the stops")

	// (c) Human input: paused through the proxy, resumed on another replica.
	pausedOn := lb.peek() // nothing else goes through the proxy meanwhile
	runID, token, conv, _ := hiPause(t, front, hiKey, marker(t, "the three-replica review"), "rev")
	_, nextEv := sseReader(t, "GET", front.URL+"/workflow/"+runID+"/events?user=rev", "", hiKey)
	lb.steer(t, func(i int) bool { return i != pausedOn })
	req, err := newRequest("POST", front.URL+"/form/human_input/"+token, `{"inputs":{"comment":"seen"},"action":"reject","user":"rev"}`, hiKey)
	if err != nil {
		t.Fatal(err)
	}
	resp, raw := rawDo(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("submit through the proxy: %d %s", resp.StatusCode, raw)
	}
	if lb.replicaOf(t, resp.Header.Get("X-Request-Id")) == pausedOn {
		t.Fatalf("the form went to replica %d, where the run paused", pausedOn)
	}
	var resumed []hiEvent
	for ev := nextEv(); ; ev = nextEv() {
		resumed = append(resumed, ev)
		if ev.name() == "workflow_finished" {
			break
		}
	}
	want := "workflow_started node_started(review) human_input_form_filled node_finished(review) message message " +
		"node_started(no) node_finished(no) message_end workflow_finished"
	if got := hiNames(resumed); got != want {
		t.Fatalf("events through the proxy:\n got %s\nwant %s", got, want)
	}
	if resumed[0]["conversation_id"] != conv || resumed[len(resumed)-1].data()["status"] != "succeeded" {
		t.Fatalf("resumed run: %v … %v", resumed[0], resumed[len(resumed)-1])
	}

	// (e) A dataset indexed through the proxy is searchable on every replica directly.
	hq := segDataset(t, know, "three-replicas", true)
	doc := indexText(t, know, hq, client.CreateDocumentByTextJSONRequestBody{Name: "policies", Text: handbookText, ProcessRule: paragraphRule()})
	var segs []string
	for _, s := range listSegments(t, know, hq, doc, nil).Data {
		segs = append(segs, s.Id.String())
	}
	slices.Sort(segs)
	const q = "how many days of paid vacation does an employee receive"
	semantic := &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 50}
	for i, p := range ps {
		var got []string
		for _, r := range retrieve(t, newClient(t, p, p.KnowledgeKey), hq, q, semantic).Records {
			got = append(got, r.Segment.Id.String())
		}
		slices.Sort(got)
		if len(segs) == 0 || !slices.Equal(got, segs) {
			t.Fatalf("semantic search on replica %d: %v, want every chunk %v", i, got, segs)
		}
	}

	// (d) kill -9 of the replica that indexes a large document and runs a stream.
	kds := kdDataset(t, know, "three-replicas-large", "economy")
	large := kdCreateFile(t, know, kds, "large.txt", kdLargeText(4<<20), automaticRule)
	kdIndexing(t, know, kds, large.Batch)
	st, err := store.Open(ctx, engine.DatabaseURL, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	victim := -1
	eventually(t, "the replica holding the indexing job", func() (bool, any) {
		var owner string
		if err := st.DB().QueryRowContext(ctx, "SELECT COALESCE(lease_owner, '') FROM jobs WHERE state = 'running'").Scan(&owner); err != nil {
			return false, err
		}
		for i, p := range ps {
			if owner != "" && regexp.MustCompile(`"jobs_owner":"`+regexp.QuoteMeta(owner)+`"`).MatchString(p.logs.String()) {
				victim = i
				return true, owner
			}
		}
		return false, owner
	})
	lb.steer(t, func(i int) bool { return i == victim })
	lq := marker(t, "the stream of the killed replica")
	upstream.On(lq, openaitest.Reply{Chunks: []string{"Once", " upon"}, HangAfterChunks: 1})
	status, id, _, first, err := tryStream(t, limited, lq, "kim")
	if err != nil || status != 200 || lb.replicaOf(t, id) != victim {
		t.Fatalf("stream on the victim: %d %v (replica %d, want %d)", status, err, lb.replicaOf(t, id), victim)
	}
	lconv := first.ConversationId.String()
	eventually(t, "the answer so far in history", func() (bool, any) {
		h := historyOf(t, limited, lconv, "kim")
		return len(h) == 1 && h[0].Answer == "Once", h
	})
	// The limited app's only slot is held across the replicas.
	lb.steer(t, func(i int) bool { return i != victim })
	upstream.On(marker(t, "refused"), openaitest.Reply{Text: "no"})
	if res, err := limited.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "refused"), "kim", false)); err != nil || res.StatusCode() != 429 {
		t.Fatalf("a second request while the victim holds the slot: %v %d %s", err, res.StatusCode(), res.Body)
	}
	if err := ps[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	lb.setDown(victim)

	kdCompleted(t, know, kds, large.Batch)
	eventually(t, "the killed replica's message to end as interrupted", func() (bool, any) {
		h := historyOf(t, limited, lconv, "kim")
		return len(h) == 1 && h[0].Status == client.HistoryMessageStatusError, h
	})
	if m := historyOf(t, limited, lconv, "kim")[0]; m.Answer != "Once" || m.Error == nil || *m.Error != interruptedError || m.Query != lq {
		t.Fatalf("the killed replica's message: %+v (error %v)", m, m.Error)
	}
	admitted(t, limited, "after the slot holder was killed")
	// Every job taken over is finished: none is left in the queue but the human-input form's
	// timer, which waits for the form's deadline (days away) whatever became of the form.
	eventually(t, "an empty job queue", func() (bool, any) {
		rows, err := st.DB().QueryContext(ctx, "SELECT kind, state, attempts FROM jobs WHERE kind <> 'humaninput.timer'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var left []string
		for rows.Next() {
			var kind, state string
			var attempts int
			if err := rows.Scan(&kind, &state, &attempts); err != nil {
				t.Fatal(err)
			}
			left = append(left, fmt.Sprintf("%s %s after %d attempts", kind, state, attempts))
		}
		return len(left) == 0, left
	})
}
