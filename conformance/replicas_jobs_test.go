package conformance

import (
	"testing"

	"github.com/parleyhq/parley/internal/store"
)

// TestReplicasTakeOverIndexing runs two servers on one PostgreSQL database with a short job
// lease (PARLEY_JOB_LEASE, set for every conformance server): A is killed (SIGKILL) while it
// indexes a document; B, which keeps running and is never restarted, claims the job once A's
// lease has expired and completes the document. The job ran exactly twice in all, once on A
// (cut short) and once on B: the document's second indexing generation is the one served, and
// no job is left in the queue.
func TestReplicasTakeOverIndexing(t *testing.T) {
	a, b := postgresPair(t)
	ka, kb := newClient(t, a, a.KnowledgeKey), newClient(t, b, b.KnowledgeKey)
	ds := kdDataset(t, ka, "takeover", "economy")
	doc := kdCreateFile(t, ka, ds, "large.txt", kdLargeText(4<<20), automaticRule)
	kdIndexing(t, ka, ds, doc.Batch)
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	kdCompleted(t, kb, ds, doc.Batch)

	st, err := store.Open(t.Context(), b.engine.DatabaseURL, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var gen, indexingGen, jobs int
	if err := st.DB().QueryRowContext(t.Context(), "SELECT generation, indexing_generation FROM documents WHERE id = $1",
		doc.Document.Id.String()).Scan(&gen, &indexingGen); err != nil {
		t.Fatal(err)
	}
	if gen != 2 || indexingGen != 2 {
		t.Fatalf("generation %d, indexing generation %d; want 2 and 2 (one attempt on A, one on B)", gen, indexingGen)
	}
	if err := st.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM jobs").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Fatalf("%d jobs left in the queue", jobs)
	}
}
