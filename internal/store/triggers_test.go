package store

import (
	"errors"
	"testing"
	"time"
)

// TestAppTriggers: a sync stores an app's triggers, keeps a webhook's id and a schedule's status
// and tick across syncs (a changed schedule takes its new tick), replaces a node whose kind
// changed and deletes those gone; a webhook is found by its id; deleting the app deletes them.
func TestAppTriggers(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		app := mustApp(t, s, "triggered")
		tick := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
		later := tick.Add(time.Hour)
		got, err := s.SyncAppTriggers(ctx, app, "v1", []AppTrigger{
			{NodeID: "hook", Kind: TriggerWebhook, WebhookID: "id-1"},
			{NodeID: "sched", Kind: TriggerSchedule, Cron: "0 9 * * *", Timezone: "UTC", NextRunAt: &tick},
			{NodeID: "gone", Kind: TriggerWebhook, WebhookID: "id-gone"},
		})
		if err != nil || len(got) != 3 {
			t.Fatalf("first sync: %+v %v", got, err)
		}
		if err := s.SetTriggerStatus(ctx, app, "sched", TriggerPaused, nil); err != nil {
			t.Fatal(err)
		}
		// Again, from version 2: the webhook's new random id is not taken, the paused schedule
		// stays paused with its tick; "gone" is gone and "hook2" new.
		got, err = s.SyncAppTriggers(ctx, app, "v2", []AppTrigger{
			{NodeID: "hook", Kind: TriggerWebhook, WebhookID: "id-new"},
			{NodeID: "sched", Kind: TriggerSchedule, Cron: "0 9 * * *", Timezone: "UTC", NextRunAt: &later},
			{NodeID: "hook2", Kind: TriggerWebhook, WebhookID: "id-2"},
		})
		if err != nil || len(got) != 3 {
			t.Fatalf("second sync: %+v %v", got, err)
		}
		byNode := map[string]AppTrigger{}
		for _, tr := range got {
			byNode[tr.NodeID] = tr
		}
		if h := byNode["hook"]; h.WebhookID != "id-1" || h.VersionID != "v2" || h.Status != TriggerEnabled {
			t.Fatalf("hook %+v", h)
		}
		if sc := byNode["sched"]; sc.Status != TriggerPaused || sc.NextRunAt == nil || !sc.NextRunAt.Equal(tick) {
			t.Fatalf("sched %+v", sc)
		}
		// A changed schedule takes its new tick.
		got, err = s.SyncAppTriggers(ctx, app, "v3", []AppTrigger{
			{NodeID: "sched", Kind: TriggerSchedule, Cron: "0 10 * * *", Timezone: "UTC", NextRunAt: &later},
		})
		if err != nil || len(got) != 1 || got[0].Cron != "0 10 * * *" || !got[0].NextRunAt.Equal(later) {
			t.Fatalf("changed schedule: %+v %v", got, err)
		}
		if _, err := s.TriggerByWebhookID(ctx, "id-1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a webhook no longer in the graph: %v", err)
		}
		got, err = s.SyncAppTriggers(ctx, app, "v4", []AppTrigger{{NodeID: "sched", Kind: TriggerWebhook, WebhookID: "id-3"}})
		if err != nil || len(got) != 1 || got[0].Kind != TriggerWebhook {
			t.Fatalf("a node that changed kind: %+v %v", got, err)
		}
		other := mustApp(t, s, "other")
		if _, err := s.SyncAppTriggers(ctx, other, "v1", []AppTrigger{{NodeID: "n", Kind: TriggerWebhook, WebhookID: "id-3"}}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a webhook id in use: %v", err)
		}
		if tr, err := s.TriggerByWebhookID(ctx, "id-3"); err != nil || tr.AppID != app {
			t.Fatalf("by id: %+v %v", tr, err)
		}
		if err := s.DeleteApp(ctx, app); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TriggerByWebhookID(ctx, "id-3"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a deleted app's webhook: %v", err)
		}
		if err := s.SetTriggerStatus(ctx, app, "sched", TriggerEnabled, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a deleted app's trigger: %v", err)
		}
	})
}

// TestClaimScheduleTick: a tick is claimed once, with its job; a stale view of the schedule, a
// paused schedule or a claimed tick changes nothing.
func TestClaimScheduleTick(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		app := mustApp(t, s, "ticking")
		tick := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
		next := tick.Add(24 * time.Hour)
		if _, err := s.SyncAppTriggers(ctx, app, "v1", []AppTrigger{
			{NodeID: "sched", Kind: TriggerSchedule, Cron: "0 9 * * *", Timezone: "UTC", NextRunAt: &tick}}); err != nil {
			t.Fatal(err)
		}
		due, err := s.DueSchedules(ctx, tick, 10)
		if err != nil || len(due) != 1 {
			t.Fatalf("due: %+v %v", due, err)
		}
		if due, _ := s.DueSchedules(ctx, tick.Add(-time.Second), 10); len(due) != 0 {
			t.Fatalf("due before its tick: %+v", due)
		}
		job := func(id string) JobRow {
			return JobRow{ID: id, Kind: "trigger.run", Payload: []byte("{}"), MaxAttempts: 5}
		}
		if err := s.ClaimScheduleTick(ctx, app, "sched", tick, next, "a", job("j1")); err != nil {
			t.Fatal(err)
		}
		// A second replica that read the same tick: taken.
		if err := s.ClaimScheduleTick(ctx, app, "sched", tick, next, "b", job("j2")); !errors.Is(err, ErrTickTaken) {
			t.Fatalf("second claim: %v", err)
		}
		// The schedule moved back to the tick (a resume at the wrong moment): the tick's row
		// still refuses it.
		if err := s.SetTriggerStatus(ctx, app, "sched", TriggerEnabled, &tick); err != nil {
			t.Fatal(err)
		}
		if err := s.ClaimScheduleTick(ctx, app, "sched", tick, next, "b", job("j3")); !errors.Is(err, ErrTickTaken) {
			t.Fatalf("a tick claimed before: %v", err)
		}
		if err := s.SetTriggerStatus(ctx, app, "sched", TriggerPaused, &next); err != nil {
			t.Fatal(err)
		}
		if err := s.ClaimScheduleTick(ctx, app, "sched", next, next.Add(time.Hour), "a", job("j4")); !errors.Is(err, ErrTickTaken) {
			t.Fatalf("a paused schedule: %v", err)
		}
		ticks, err := s.ScheduleTicks(ctx, app, "sched", tick.Add(-time.Hour))
		if err != nil || len(ticks) != 1 || !ticks[0].Equal(tick) {
			t.Fatalf("ticks %v %v", ticks, err)
		}
		counts, err := s.JobCounts(ctx)
		if err != nil || len(counts) != 1 || counts[0].Jobs != 1 {
			t.Fatalf("jobs %+v %v", counts, err)
		}
		// A schedule that never ticks again keeps no next tick.
		if err := s.SetTriggerStatus(ctx, app, "sched", TriggerEnabled, &next); err != nil {
			t.Fatal(err)
		}
		if err := s.ClaimScheduleTick(ctx, app, "sched", next, time.Time{}, "a", job("j5")); err != nil {
			t.Fatal(err)
		}
		ts, err := s.AppTriggers(ctx, app)
		if err != nil || ts[0].NextRunAt != nil {
			t.Fatalf("never again: %+v %v", ts, err)
		}
	})
}
