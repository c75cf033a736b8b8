package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// chatFixture is a migrated store with two apps and three end users: alice
// and bob in app, and a second "alice" (same session id) in otherApp.
type chatFixture struct {
	s               *Store
	app, otherApp   string
	alice, bob      EndUser
	aliceInOtherApp EndUser
}

func newChatFixture(t *testing.T, s *Store) chatFixture {
	t.Helper()
	ctx := t.Context()
	apps, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}, {"other", "chat"}})
	if err != nil {
		t.Fatal(err)
	}
	f := chatFixture{s: s, app: apps["support"].ID, otherApp: apps["other"].ID}
	for _, u := range []struct {
		dst          *EndUser
		app, session string
	}{
		{&f.alice, f.app, "alice"},
		{&f.bob, f.app, "bob"},
		{&f.aliceInOtherApp, f.otherApp, "alice"},
	} {
		if *u.dst, err = s.EndUser(ctx, u.app, u.session); err != nil {
			t.Fatalf("EndUser(%s): %v", u.session, err)
		}
	}
	return f
}

// TestEndUserGetOrCreate races first requests of the same user from
// several pools (standing in for several processes) on both engines: all
// must get the same row.
func TestEndUserGetOrCreate(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		s := openEngine(t, e, true)
		apps, err := s.SyncApps(ctx, []AppSpec{{"support", "chat"}, {"other", "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		appID := apps["support"].ID

		const pools, perPool = 4, 8
		type result struct {
			u   EndUser
			err error
		}
		results := make(chan result, pools*perPool)
		var wg sync.WaitGroup
		for range pools {
			pool := openEngine(t, e, false)
			for range perPool {
				wg.Go(func() {
					u, err := pool.EndUser(ctx, appID, "abc-123")
					results <- result{u, err}
				})
			}
		}
		wg.Wait()
		close(results)
		var first EndUser
		for r := range results {
			if r.err != nil {
				t.Fatalf("concurrent EndUser: %v", r.err)
			}
			if first.ID == "" {
				first = r.u
			}
			if r.u != first {
				t.Fatalf("concurrent EndUser calls returned %+v and %+v", first, r.u)
			}
		}
		if first.AppID != appID || first.SessionID != "abc-123" || first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
			t.Errorf("EndUser = %+v", first)
		}
		if id, err := uuid.Parse(first.ID); err != nil || id.Version() != 7 {
			t.Errorf("end user id %q is not a UUIDv7 (%v)", first.ID, err)
		}
		var rows int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM end_users").Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("end_users rows = %d, %v; want 1", rows, err)
		}

		// Later calls read the same row; EndUserByID finds it within its app only.
		again, err := s.EndUser(ctx, appID, "abc-123")
		if err != nil || again != first {
			t.Fatalf("EndUser again = %+v, %v; want %+v", again, err, first)
		}
		byID, err := s.EndUserByID(ctx, appID, first.ID)
		if err != nil || byID != first {
			t.Fatalf("EndUserByID = %+v, %v", byID, err)
		}
		otherApp := apps["other"].ID
		if _, err := s.EndUserByID(ctx, otherApp, first.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("EndUserByID from another app: err = %v, want ErrNotFound", err)
		}
		if _, err := s.EndUserByID(ctx, appID, NewID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("EndUserByID(unknown): err = %v, want ErrNotFound", err)
		}

		// The same session id in another app is another end user.
		other, err := s.EndUser(ctx, otherApp, "abc-123")
		if err != nil || other.ID == first.ID || other.AppID != otherApp {
			t.Fatalf("EndUser in other app = %+v, %v", other, err)
		}

		if _, err := s.EndUser(ctx, appID, ""); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("EndUser with empty session: err = %v, want a plain error", err)
		}
		if _, err := s.EndUser(ctx, NewID(), "abc-123"); !errors.Is(err, ErrNotFound) {
			t.Errorf("EndUser for unknown app: err = %v, want ErrNotFound", err)
		}
	})
}

// TestEndUsersManySessions creates many distinct users concurrently: no
// busy errors on SQLite, no lost rows.
func TestEndUsersManySessions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		for i := range n {
			for range 2 { // each session twice, concurrently
				wg.Go(func() {
					if _, err := s.EndUser(ctx, f.app, fmt.Sprintf("user-%d", i)); err != nil {
						errs <- err
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var rows int
		if err := s.DB().QueryRowContext(ctx, s.Rebind("SELECT COUNT(*) FROM end_users WHERE app_id = ?"), f.app).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if want := n + 2; rows != want { // + alice and bob
			t.Errorf("end users in app = %d, want %d", rows, want)
		}
	})
}
