package store

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
		for _, m := range []migration{migrationJobs, migrationJobTraces} {
			if _, err := s.db.ExecContext(ctx, m.sql(s.dialect)); err != nil {
				t.Fatal(err)
			}
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

// TestClaimPlanReadsInIndexOrder: a claim finds the due job by walking an index in order, never
// by collecting every due job and sorting them, which made each claim cost as much as the
// backlog was long.
func TestClaimPlanReadsInIndexOrder(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		q, args := s.claimQuery([]string{"a", "b"}, "owner", 1000, time.Minute)
		explain := "EXPLAIN QUERY PLAN "
		if s.dialect == DialectPostgres {
			explain = "EXPLAIN "
		}
		rows, err := s.db.QueryContext(t.Context(), s.Rebind(explain+q), args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var plan strings.Builder
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&plan, vals[len(vals)-1])
		}
		p := plan.String()
		for _, sorted := range []string{"TEMP B-TREE", "Sort", "MULTI-INDEX OR", "BitmapOr"} {
			if strings.Contains(p, sorted) {
				t.Fatalf("the claim sorts or merges the due jobs (%s):\n%s", sorted, p)
			}
		}
		if s.dialect == DialectSQLite && (!strings.Contains(p, "jobs_due") || !strings.Contains(p, "jobs_lease")) {
			t.Fatalf("the claim does not read the jobs' indexes:\n%s", p)
		}
	})
}

// TestJobTracesAndCounts: a job keeps the traceparent it was queued with, claimed or read; the
// queue's metrics count the jobs by kind and state, with the oldest due one.
func TestJobTracesAndCounts(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		now := time.Now()
		for _, j := range []JobRow{
			{ID: "a1", Kind: "a", MaxAttempts: 5, RunAfter: now.Add(-time.Minute), TraceParent: tp},
			{ID: "a2", Kind: "a", MaxAttempts: 5, RunAfter: now.Add(-time.Second)},
			{ID: "a3", Kind: "a", MaxAttempts: 5, RunAfter: now.Add(time.Hour)},
			{ID: "b1", Kind: "b", MaxAttempts: 5, RunAfter: now.Add(time.Hour)},
		} {
			if err := s.InsertJob(ctx, j); err != nil {
				t.Fatal(err)
			}
		}
		if j, err := s.GetJob(ctx, "a1"); err != nil || j.TraceParent != tp {
			t.Fatalf("get: %+v %v", j, err)
		}
		counts, err := s.JobCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(counts) != 2 || counts[0].Kind != "a" || counts[0].Jobs != 3 || counts[0].OldestDue.UnixMilli() != now.Add(-time.Minute).UnixMilli() ||
			counts[1].Kind != "b" || counts[1].Jobs != 1 || !counts[1].OldestDue.IsZero() {
			t.Fatalf("counts %+v", counts)
		}
		j, err := s.ClaimJob(ctx, []string{"a"}, "me", now, time.Minute)
		if err != nil || j == nil || j.ID != "a1" || j.TraceParent != tp {
			t.Fatalf("claim: %+v %v", j, err)
		}
		counts, err = s.JobCounts(ctx)
		if err != nil || len(counts) != 3 || counts[0].State != JobQueued || counts[0].Jobs != 2 || counts[1].State != JobRunning || counts[1].Jobs != 1 {
			t.Fatalf("counts after a claim %+v %v", counts, err)
		}
	})
}
