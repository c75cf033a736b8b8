package store

import (
	"testing"
)

// TestJobsMigrationQueuesEarlierWork: upgrading to durable jobs queues what the scans of an
// earlier version would have found: the indexing of each unfinished, unpaused document (run 0)
// and the deadline of each waiting human-input form.
func TestJobsMigrationQueuesEarlierWork(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		ds := kbDataset(t, s, "a")
		mk := func(status string, paused bool) Document {
			return kbDocument(t, s, ds.ID, status, func(d *Document) { d.IndexingStatus, d.IsPaused = status, paused })
		}
		waiting := mk(IndexingWaiting, false)
		indexing := mk(IndexingIndexing, false)
		paused := mk(IndexingIndexing, true)
		done := mk(IndexingCompleted, false)
		_, forms := pausedRun(t, s, newChatFixture(t, s), "review")
		// The database as the earlier version left it: no jobs table.
		if _, err := s.exec(ctx, `DROP TABLE jobs`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.ExecContext(ctx, migrationJobs.sql(s.dialect)); err != nil {
			t.Fatal(err)
		}
		for _, d := range []Document{waiting, indexing} {
			j, err := s.GetJob(ctx, "knowledge.index:"+d.ID)
			if err != nil || j.State != JobQueued || string(j.Payload) != d.DatasetID+"/"+d.ID+"/0" {
				t.Fatalf("job of unfinished document %s: %+v %v", d.ID, j, err)
			}
		}
		for _, d := range []Document{paused, done} {
			if _, err := s.GetJob(ctx, "knowledge.index:"+d.ID); err == nil {
				t.Fatalf("document %s (%s, paused %v) was queued", d.ID, d.IndexingStatus, d.IsPaused)
			}
		}
		j, err := s.GetJob(ctx, JobKindHumanInputTimer+":"+forms[0].ID)
		if err != nil || j.RunAfter.Unix() != forms[0].Expiration.Unix() || string(j.Payload) != forms[0].ID {
			t.Fatalf("timer of the waiting form: %+v %v", j, err)
		}
	})
}
