package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/store/storetest"
	"github.com/parleyhq/parley/internal/store/testdb"
)

// fixture is a service on a fresh database with one configured app.
type fixture struct {
	st    *store.Store
	svc   *Service
	appID string
}

func forEachEngine(t *testing.T, fn func(t *testing.T, f fixture)) {
	t.Helper()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		st := testdb.Open(t, e)
		apps, err := st.SyncApps(t.Context(), []store.AppSpec{{Name: "support", Mode: "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		svc := New(st)
		t.Cleanup(svc.Close) // runs before the store is closed
		fn(t, fixture{st: st, svc: svc, appID: apps["support"].ID})
	})
}

func TestCreateAndAuthenticate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, f fixture) {
		ctx := t.Context()
		for _, tc := range []struct {
			kind  Kind
			appID string
		}{
			{KindApp, f.appID},
			{KindKnowledge, ""},
		} {
			secret, key, err := f.svc.Create(ctx, tc.kind, tc.appID)
			if err != nil {
				t.Fatalf("Create(%s): %v", tc.kind, err)
			}
			if !wellFormed(secret, tc.kind) {
				t.Errorf("secret %q is not a well-formed %s key", secret, tc.kind)
			}
			if want := tc.kind.Prefix() + secret[len(tc.kind.Prefix()):][:displayChars]; key.Prefix != want {
				t.Errorf("display prefix = %q, want %q", key.Prefix, want)
			}
			if key.Kind != tc.kind || key.AppID != tc.appID || key.ID == "" || key.CreatedAt.IsZero() || key.RevokedAt != nil {
				t.Errorf("Create returned %+v", key)
			}

			got, err := f.svc.Authenticate(ctx, secret, tc.kind)
			if err != nil {
				t.Fatalf("Authenticate(%s): %v", tc.kind, err)
			}
			if got.ID != key.ID || got.Kind != tc.kind || got.AppID != tc.appID || got.Prefix != key.Prefix || !got.CreatedAt.Equal(key.CreatedAt) {
				t.Errorf("Authenticate = %+v, want %+v", got, key)
			}

			// Only the hash is stored.
			rec, err := f.st.APIKeyByHash(ctx, sha(secret))
			if err != nil {
				t.Fatalf("stored record: %v", err)
			}
			if bytes.Contains(rec.TokenHash, []byte(secret)) || strings.Contains(rec.Prefix, secret) {
				t.Errorf("the secret is stored: %+v", rec)
			}
		}
	})
}

func sha(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, f fixture) {
		ctx := t.Context()
		for name, tc := range map[string]struct {
			kind  Kind
			appID string
		}{
			"unknown kind":           {"admin", ""},
			"empty kind":             {"", f.appID},
			"app key without app":    {KindApp, ""},
			"knowledge key with app": {KindKnowledge, f.appID},
		} {
			if _, _, err := f.svc.Create(ctx, tc.kind, tc.appID); err == nil {
				t.Errorf("%s: want error", name)
			}
		}
		if _, _, err := f.svc.Create(ctx, KindApp, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("app key for unknown app: err = %v, want store.ErrNotFound", err)
		}
		if keys, _ := f.svc.List(ctx); len(keys) != 0 {
			t.Errorf("failed creates left keys behind: %+v", keys)
		}
	})
}

func TestAuthenticateRejects(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, f fixture) {
		ctx := t.Context()
		appSecret, _, err := f.svc.Create(ctx, KindApp, f.appID)
		if err != nil {
			t.Fatal(err)
		}
		dsSecret, _, err := f.svc.Create(ctx, KindKnowledge, "")
		if err != nil {
			t.Fatal(err)
		}
		revoked, revokedKey, err := f.svc.Create(ctx, KindApp, f.appID)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Revoke(ctx, revokedKey.ID); err != nil {
			t.Fatal(err)
		}
		body := appSecret[len("app-"):]
		flipped := []byte(appSecret)
		if flipped[len(flipped)-1] == 'a' {
			flipped[len(flipped)-1] = 'b'
		} else {
			flipped[len(flipped)-1] = 'a'
		}

		for name, tc := range map[string]struct {
			secret string
			want   Kind
		}{
			"app key as knowledge key":  {appSecret, KindKnowledge},
			"knowledge key as app key":  {dsSecret, KindApp},
			"revoked":                   {revoked, KindApp},
			"tampered last char":        {string(flipped), KindApp},
			"unknown but well-formed":   {"app-" + strings.Repeat("A", secretBodyLen), KindApp},
			"empty":                     {"", KindApp},
			"prefix only":               {"app-", KindApp},
			"no prefix":                 {body, KindApp},
			"wrong prefix, right body":  {"dataset-" + body, KindApp},
			"uppercase prefix":          {"APP-" + body, KindApp},
			"truncated":                 {appSecret[:len(appSecret)-1], KindApp},
			"extended":                  {appSecret + "x", KindApp},
			"bad charset":               {"app-" + strings.Repeat("_", secretBodyLen), KindApp},
			"non-ascii":                 {"app-" + strings.Repeat("é", secretBodyLen/2) + "a", KindApp},
			"with bearer scheme":        {"Bearer " + appSecret, KindApp},
			"surrounding space":         {" " + appSecret, KindApp},
			"far too long":              {"app-" + strings.Repeat("a", 10_000), KindApp},
			"unknown wanted kind":       {appSecret, "admin"},
			"right secret, empty kind":  {appSecret, ""},
			"dify-style 24-char secret": {"app-" + strings.Repeat("x", 24), KindApp},
		} {
			key, err := f.svc.Authenticate(ctx, tc.secret, tc.want)
			// The exact sentinel, not a wrapped variant: nothing more leaks.
			if err != ErrInvalidKey { //nolint:errorlint // deliberate identity check
				t.Errorf("%s: err = %v, want exactly ErrInvalidKey", name, err)
			}
			if key != (Key{}) {
				t.Errorf("%s: returned a key: %+v", name, key)
			}
		}

		// The genuine keys still work.
		if _, err := f.svc.Authenticate(ctx, appSecret, KindApp); err != nil {
			t.Errorf("app key: %v", err)
		}
		if _, err := f.svc.Authenticate(ctx, dsSecret, KindKnowledge); err != nil {
			t.Errorf("knowledge key: %v", err)
		}
	})
}

func TestAuthenticateStorageFailureIsNotInvalidKey(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, storetest.NewEngine(t, storetest.SQLite))
	svc := New(st)
	defer svc.Close()
	_ = st.Close() // the database goes away
	_, err := svc.Authenticate(t.Context(), "app-"+strings.Repeat("A", secretBodyLen), KindApp)
	if err == nil || errors.Is(err, ErrInvalidKey) {
		t.Fatalf("err = %v; a storage failure must not look like a bad key (that would be a 401, not a 500)", err)
	}
}

func TestSecretsAreRandom(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		b, err := randomBody()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != secretBodyLen || !wellFormed("app-"+b, KindApp) {
			t.Fatalf("randomBody() = %q: want %d base62 chars", b, secretBodyLen)
		}
		if seen[b] {
			t.Fatalf("duplicate secret %q", b)
		}
		seen[b] = true
	}
}

func TestListAndRevoke(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, f fixture) {
		ctx := t.Context()
		_, a, err := f.svc.Create(ctx, KindApp, f.appID)
		if err != nil {
			t.Fatal(err)
		}
		_, d, err := f.svc.Create(ctx, KindKnowledge, "")
		if err != nil {
			t.Fatal(err)
		}
		keys, err := f.svc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 2 {
			t.Fatalf("List = %+v, want 2 keys", keys)
		}
		ids := map[string]Key{}
		for _, k := range keys {
			ids[k.ID] = k
		}
		if ids[a.ID].Kind != KindApp || ids[a.ID].AppID != f.appID || ids[d.ID].Kind != KindKnowledge || ids[d.ID].AppID != "" {
			t.Errorf("List = %+v", keys)
		}

		if err := f.svc.Revoke(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Revoke(ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second Revoke: err = %v, want store.ErrNotFound", err)
		}
		if err := f.svc.Revoke(ctx, "no-such-id"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Revoke(unknown): err = %v, want store.ErrNotFound", err)
		}
		keys, _ = f.svc.List(ctx)
		for _, k := range keys {
			if (k.ID == a.ID) != (k.RevokedAt != nil) {
				t.Errorf("after revoke: %+v", k)
			}
		}
	})
}

// countingStore counts last-used writes.
type countingStore struct {
	*store.Store
	touches atomic.Int64
}

func (c *countingStore) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	c.touches.Add(1)
	return c.Store.TouchAPIKey(ctx, id, at)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestLastUsedIsThrottled(t *testing.T) {
	t.Parallel()
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ctx := t.Context()
		cs := &countingStore{Store: testdb.Open(t, e)}
		clock := &fakeClock{now: time.Unix(1_800_000_000, 0).UTC()}
		svc := New(cs)
		svc.now = clock.Now
		t.Cleanup(svc.Close)

		secret, _, err := svc.Create(ctx, KindKnowledge, "")
		if err != nil {
			t.Fatal(err)
		}
		authN := func(n int) {
			t.Helper()
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					if _, err := svc.Authenticate(ctx, secret, KindKnowledge); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			svc.pending.Wait() // the background writes, not a sleep
		}

		authN(20)
		if n := cs.touches.Load(); n != 1 {
			t.Fatalf("after 20 uses in one instant: %d last-used writes, want 1", n)
		}
		clock.Advance(DefaultTouchInterval - time.Second)
		authN(5)
		if n := cs.touches.Load(); n != 1 {
			t.Fatalf("within the interval: %d writes, want 1", n)
		}
		clock.Advance(time.Second)
		authN(5)
		if n := cs.touches.Load(); n != 2 {
			t.Fatalf("after the interval: %d writes, want 2", n)
		}
		keys, err := svc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != 1 || keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(clock.Now()) {
			t.Fatalf("LastUsedAt = %v, want %v", keys[0].LastUsedAt, clock.Now())
		}

		// A restarted service trusts the stored time and does not write again
		// within the interval.
		svc2 := New(cs)
		svc2.now = clock.Now
		t.Cleanup(svc2.Close)
		if _, err := svc2.Authenticate(ctx, secret, KindKnowledge); err != nil {
			t.Fatal(err)
		}
		svc2.pending.Wait()
		if n := cs.touches.Load(); n != 2 {
			t.Fatalf("restarted service wrote again within the interval: %d writes", n)
		}

		// After Close nothing more is written, but keys still authenticate.
		svc.Close()
		clock.Advance(time.Hour)
		if _, err := svc.Authenticate(ctx, secret, KindKnowledge); err != nil {
			t.Fatal(err)
		}
		if n := cs.touches.Load(); n != 2 {
			t.Fatalf("write after Close: %d writes", n)
		}
	})
}

func BenchmarkAuthenticate(b *testing.B) {
	st := testdb.Open(b, storetest.NewEngine(b, storetest.SQLite))
	svc := New(st)
	b.Cleanup(svc.Close)
	secret, _, err := svc.Create(b.Context(), KindKnowledge, "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := svc.Authenticate(ctx, secret, KindKnowledge); err != nil {
			b.Fatal(err)
		}
	}
}
