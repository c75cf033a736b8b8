package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/redisx"
	"github.com/parleyhq/parley/internal/redisx/redistest"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/vectorindex"
)

// TestReplicasShareVectorIndex runs two servers on one PostgreSQL database and one Redis. A
// high-quality knowledge base is searched through B (so B's vector index holds it), then a
// document is indexed, a chunk disabled and another deleted through A; after each change has
// been answered by A, B's semantic retrieval and hit-testing already reflect it: the staleness
// bound of a search is zero (docs/replicas.md), so there is nothing to wait for. The change
// is announced on the deployment's Redis channel, which the replicas follow to catch up early.
func TestReplicasShareVectorIndex(t *testing.T) {
	if binary == "" {
		t.Skip("needs to start servers of its own")
	}
	prefix := redistest.Prefix(t)
	a := newParley(storetest.NewEngine(t, storetest.Postgres), "PARLEY_REDIS_URL="+redistest.URL(), "PARLEY_REDIS_KEY_PREFIX="+prefix)
	a.KnowledgeKey = a.CLI(t, "keys", "create", "--knowledge")
	a.Start(t)
	b := filesReplica(t, a)
	ca, cb := newClient(t, a, a.KnowledgeKey), newClient(t, b, b.KnowledgeKey)
	ctx := context.Background()

	hq := segDataset(t, ca, "shared-vectors", true)
	const q = "how many days of paid vacation does an employee receive"
	semantic := &client.RetrievalModel{SearchMethod: client.SemanticSearch, TopK: 50}
	if res := retrieve(t, cb, hq, q, semantic); len(res.Records) != 0 {
		t.Fatalf("B before any document: %d records", len(res.Records))
	}

	// B's results are exactly the enabled chunks A lists.
	segmentsOn := func(c *client.ClientWithResponses, what string) []string {
		t.Helper()
		res := retrieve(t, c, hq, q, semantic)
		ids := make([]string, 0, len(res.Records))
		for _, r := range res.Records {
			ids = append(ids, r.Segment.Id.String())
		}
		slices.Sort(ids)
		ht, err := c.HitTestingWithResponse(ctx, hq, client.HitTestingJSONRequestBody{Query: ptr(q), RetrievalModel: semantic})
		if err != nil || ht.JSON200 == nil {
			t.Fatalf("%s: hit-testing: %v %d %s", what, err, ht.StatusCode(), ht.Body)
		}
		hit := make([]string, 0, len(ht.JSON200.Records))
		for _, r := range ht.JSON200.Records {
			hit = append(hit, r.Segment.Id.String())
		}
		slices.Sort(hit)
		if !slices.Equal(ids, hit) {
			t.Errorf("%s: retrieve %v, hit-testing %v", what, ids, hit)
		}
		return ids
	}
	// The replicas announce changes of the knowledge base on the deployment's channel.
	rc, err := redisx.Open(ctx, redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sub := rc.Subscribe(ctx, prefix+"ch:"+vectorindex.ChangedChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	doc := indexText(t, ca, hq, client.CreateDocumentByTextJSONRequestBody{Name: "policies", Text: handbookText, ProcessRule: paragraphRule()})
	segs := listSegments(t, ca, hq, doc, nil).Data
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(segs))
	}
	enabled := make([]string, 0, len(segs))
	for _, s := range segs {
		enabled = append(enabled, s.Id.String())
	}
	slices.Sort(enabled)
	if got := segmentsOn(cb, "B after indexing on A"); !slices.Equal(got, enabled) {
		t.Fatalf("B after indexing on A: %v, want %v", got, enabled)
	}
	select {
	case m := <-sub.Channel():
		if !strings.Contains(m.Payload, hq) {
			t.Errorf("announcement %s, want one of %s", m.Payload, hq)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no announcement of the indexed knowledge base on Redis")
	}

	off, gone := segs[0].Id.String(), segs[1].Id.String()
	dis, err := ca.UpdateSegmentWithResponse(ctx, hq, doc, off, client.UpdateSegmentJSONRequestBody{Segment: client.SegmentUpdate{Enabled: ptr(false)}})
	if err != nil || dis.JSON200 == nil {
		t.Fatalf("disable on A: %v %d %s", err, dis.StatusCode(), dis.Body)
	}
	if got := segmentsOn(cb, "B after a disable on A"); slices.Contains(got, off) || len(got) != len(enabled)-1 {
		t.Fatalf("B after disabling %s on A: %v", off, got)
	}
	del, err := ca.DeleteSegmentWithResponse(ctx, hq, doc, gone)
	if err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete on A: %v %d %s", err, del.StatusCode(), del.Body)
	}
	if got := segmentsOn(cb, "B after a delete on A"); slices.Contains(got, gone) || len(got) != len(enabled)-2 {
		t.Fatalf("B after deleting %s on A: %v", gone, got)
	}
	// And back through B: enabling the chunk again on B is seen on A.
	en, err := cb.UpdateSegmentWithResponse(ctx, hq, doc, off, client.UpdateSegmentJSONRequestBody{Segment: client.SegmentUpdate{Enabled: ptr(true)}})
	if err != nil || en.JSON200 == nil {
		t.Fatalf("enable on B: %v %d %s", err, en.StatusCode(), en.Body)
	}
	if got := segmentsOn(ca, "A after an enable on B"); !slices.Contains(got, off) || len(got) != len(enabled)-1 {
		t.Fatalf("A after enabling %s on B: %v", off, got)
	}
}
