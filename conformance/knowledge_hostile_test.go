package conformance

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/extract/extracttest"
)

// selfReferencingPDF is a small PDF whose page tree lists itself as its own kid, with a correct
// cross-reference table: the PDF library alone would walk it for ever.
func selfReferencingPDF() []byte {
	return extracttest.PDF([]string{"<</Type/Catalog/Pages 2 0 R>>", "<</Type/Pages/Kids[2 0 R]/Count 5>>"}, "")
}

func indexingStatus(d client.DocumentDetail) client.IndexingStatus {
	if d.IndexingStatus == nil {
		return ""
	}
	return *d.IndexingStatus
}

// hostileTimeout is the indexing timeout the hostile-document test runs the server with.
const hostileTimeout = "8s"

// TestKnowledgeHostileDocument uploads two PDFs whose text extraction would take many minutes of
// CPU (extracttest.SlowPDF), one for each indexing worker. One is deleted while it is still being parsed; the worker it held
// then indexes another document; the other ends in error when the indexing timeout is over, and
// stays so after a restart.
func TestKnowledgeHostileDocument(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		env := []string{"PARLEY_INDEXING_TIMEOUT=" + hostileTimeout, "PARLEY_INDEXING_WORKERS=2"}
		p.Restart(t, env...)
		c := newClient(t, p, p.KnowledgeKey)
		ctx := context.Background()
		ds := kdDataset(t, c, "hostile", "economy")
		pdf := extracttest.SlowPDF()
		kept := kdCreateFile(t, c, ds, "loop-kept.pdf", pdf, automaticRule)
		deleted := kdCreateFile(t, c, ds, "loop-deleted.pdf", pdf, automaticRule)
		keptID, deletedID := kept.Document.Id.String(), deleted.Document.Id.String()

		// Wait until both are being parsed: each holds a worker.
		deadline := time.Now().Add(60 * time.Second)
		for {
			a, b := indexingStatus(kdGet(t, c, ds, keptID)), indexingStatus(kdGet(t, c, ds, deletedID))
			if a == client.IndexingStatusParsing && b == client.IndexingStatusParsing {
				break
			}
			if a == client.IndexingStatusError || b == client.IndexingStatusError || time.Now().After(deadline) {
				t.Fatalf("not both parsing: %s / %s", a, b)
			}
			time.Sleep(50 * time.Millisecond)
		}

		// A document still being parsed can be deleted.
		status, body := rawCall(t, p, http.MethodDelete, "/datasets/"+ds+"/documents/"+deletedID, "", p.KnowledgeKey)
		if status != http.StatusNoContent {
			t.Fatalf("delete a document being parsed: %d %s", status, body)
		}
		r, err := c.GetDocumentWithResponse(ctx, ds, deletedID, nil)
		if err != nil || r.StatusCode() != http.StatusNotFound {
			t.Fatalf("deleted document: %v %d %s", err, r.StatusCode(), r.Body)
		}

		// The worker it held indexes other documents meanwhile.
		fine := kdCreateFile(t, c, ds, "fine.txt", []byte("Falcons nest on cliffs.\n\nWillows grow by rivers."), automaticRule)
		kdCompleted(t, c, ds, fine.Batch)

		// The other one ends in error with a readable message.
		want := "Indexing took longer than " + hostileTimeout + " and was stopped."
		st := kdWait(t, c, ds, kept.Batch)
		if st[0].IndexingStatus != client.IndexingStatusError || st[0].Error == nil || *st[0].Error != want {
			t.Fatalf("hostile document: %s %v", st[0].IndexingStatus, st[0].Error)
		}
		got := kdGet(t, c, ds, keptID)
		if got.DisplayStatus == nil || *got.DisplayStatus != client.DisplayStatusError || got.Error == nil || *got.Error != want {
			t.Fatalf("hostile document detail: %v %v", got.DisplayStatus, got.Error)
		}

		// A page tree that contains itself is refused at once as a corrupt file.
		cyclic := kdCreateFile(t, c, ds, "cyclic.pdf", selfReferencingPDF(), automaticRule)
		st = kdWait(t, c, ds, cyclic.Batch)
		if st[0].IndexingStatus != client.IndexingStatusError || st[0].Error == nil || *st[0].Error != "PDF file is corrupt: its page tree contains a cycle" {
			t.Fatalf("cyclic page tree: %s %v", st[0].IndexingStatus, ptrText(st[0].Error))
		}

		// It is not resumed at the next start.
		p.Restart(t, env...)
		c = newClient(t, p, p.KnowledgeKey)
		if st := indexingStatus(kdGet(t, c, ds, keptID)); st != client.IndexingStatusError {
			t.Fatalf("after a restart: %s", st)
		}
	})
}
