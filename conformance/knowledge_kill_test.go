package conformance

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/parleytest"
)

// kdLargeText is a few MB of varied prose, so that economy indexing takes a few seconds.
func kdLargeText(size int) []byte {
	words := []string{"apple", "river", "mountain", "silver", "garden", "engine", "violet", "harbor",
		"lantern", "meadow", "copper", "falcon", "orchard", "thunder", "willow", "canyon"}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "Paragraph %d tells of the %s near the %s and the %s %s.", i,
			words[i%16], words[(i*7)%16], words[(i*3)%16], words[(i*11)%16])
		if i%5 == 4 {
			b.WriteString("\n\n")
		} else {
			b.WriteString(" ")
		}
	}
	return []byte(b.String())
}

// TestKnowledgeIndexingSurvivesKill kills the server (SIGKILL) while a large document is being
// indexed; after a restart on the same database the server resumes the indexing and the
// document completes with the same chunks as one indexed without interruption.
func TestKnowledgeIndexingSurvivesKill(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		// Run the server by hand so it can be killed.
		cmd := exec.Command(binary, "serve")
		cmd.Env = p.env
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		t.Cleanup(func() {
			if !killed {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		addr, _ := parleytest.ReadLog(stderr, nil)
		select {
		case a := <-addr:
			p.URL = "http://" + a + "/v1"
		case <-time.After(30 * time.Second):
			t.Fatal("server did not start")
		}
		c := newClient(t, p, p.KnowledgeKey)
		ctx := context.Background()
		text := kdLargeText(4 << 20)
		ds := kdDataset(t, c, "kill-test", "economy")
		created := kdCreateFile(t, c, ds, "large.txt", text, automaticRule)
		docID := created.Document.Id.String()

		// Wait until indexing is under way, then kill -9.
		kdIndexing(t, c, ds, created.Batch)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killed = true

		// Restart on the same data: the resumer picks the document up.
		p.Start(t)
		c = newClient(t, p, p.KnowledgeKey)
		kdCompleted(t, c, ds, created.Batch)
		resumed := kdGet(t, c, ds, docID)
		if out := p.CLI(t, "datasets", "status", "kill-test"); !strings.Contains(out, "kill-test") || !strings.Contains(out, "1 documents, 1 available") {
			t.Fatalf("datasets status:\n%s", out)
		}

		// The same text indexed without interruption.
		ref := kdDataset(t, c, "kill-reference", "economy")
		again := kdCreateFile(t, c, ref, "large.txt", text, automaticRule)
		// The CLI follows the indexing to its end.
		watched := p.CLI(t, "datasets", "status", "--watch", "--interval", "100ms", "kill-reference")
		if !strings.HasSuffix(strings.TrimSpace(watched), "1 documents, 1 available") {
			t.Fatalf("datasets status --watch:\n%s", watched)
		}
		kdCompleted(t, c, ref, again.Batch)
		want := kdGet(t, c, ref, again.Document.Id.String())
		if *resumed.SegmentCount == 0 || *resumed.SegmentCount != *want.SegmentCount {
			t.Fatalf("resumed document has %d chunks, uninterrupted %d", *resumed.SegmentCount, *want.SegmentCount)
		}
		segs, err := c.ListSegmentsWithResponse(ctx, ds, docID, &client.ListSegmentsParams{Limit: ptr(1)})
		if err != nil || segs.JSON200 == nil || segs.JSON200.Total != *want.SegmentCount {
			t.Fatalf("segments of the resumed document: %v %s", err, segs.Body)
		}
	})
}
