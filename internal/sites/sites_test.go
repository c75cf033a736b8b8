package sites

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// fakeStore keeps sites and end users in memory.
type fakeStore struct {
	mu      sync.Mutex
	sites   map[string]store.Site // by id
	users   map[string]store.EndUser
	secret  []byte
	updates int
}

func newFakeStore() *fakeStore {
	return &fakeStore{sites: map[string]store.Site{}, users: map[string]store.EndUser{}}
}

func (f *fakeStore) CreateSite(_ context.Context, m store.Site) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sites {
		if s.AppID == m.AppID || s.Code == m.Code {
			return store.ErrConflict
		}
	}
	f.sites[m.ID] = m
	return nil
}

func (f *fakeStore) UpdateSite(_ context.Context, m store.Site) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sites[m.ID]; !ok {
		return store.ErrNotFound
	}
	f.updates++
	f.sites[m.ID] = m
	return nil
}

func (f *fakeStore) where(match func(store.Site) bool) (store.Site, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sites {
		if match(s) {
			return s, nil
		}
	}
	return store.Site{}, store.ErrNotFound
}

func (f *fakeStore) SiteByApp(_ context.Context, appID string) (store.Site, error) {
	return f.where(func(s store.Site) bool { return s.AppID == appID })
}

func (f *fakeStore) SiteByCode(_ context.Context, code string) (store.Site, error) {
	return f.where(func(s store.Site) bool { return s.Code == code })
}

func (f *fakeStore) SiteByID(_ context.Context, id string) (store.Site, error) {
	return f.where(func(s store.Site) bool { return s.ID == id })
}

func (f *fakeStore) EndUser(_ context.Context, appID, session string) (store.EndUser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := appID + "/" + session
	if u, ok := f.users[k]; ok {
		return u, nil
	}
	u := store.EndUser{ID: store.NewID(), AppID: appID, SessionID: session}
	f.users[k] = u
	return u, nil
}

func (f *fakeStore) SharedSecret(_ context.Context, _ string, candidate []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.secret == nil {
		f.secret = candidate
	}
	return f.secret, nil
}

type fakeApps map[string]*apps.App

func (f fakeApps) Get(_ context.Context, id string) (*apps.App, error) {
	if a, ok := f[id]; ok {
		return a, nil
	}
	return nil, apps.ErrNotFound
}

func setup(t *testing.T) (*Service, *fakeStore, *apps.App, *apps.App) {
	t.Helper()
	st := newFakeStore()
	chat := &apps.App{ID: "app-1", Name: "helpdesk", Mode: apps.ModeChat, Description: "Answers.", Enabled: true,
		Icon: apps.Icon{Type: "emoji", Icon: "🤖", Background: "#FFEAD5"}}
	flow := &apps.App{ID: "app-2", Name: "flow", Mode: apps.ModeWorkflow, Enabled: true}
	svc, err := New(t.Context(), st, fakeApps{chat.ID: chat, flow.ID: flow})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st, chat, flow
}

// TestSiteDefaults: a new site is enabled, has a 16-character code and shows the app's title,
// description and icon; its page path follows the app's kind; ByCode finds it, and not a
// disabled one or an unknown code.
func TestSiteDefaults(t *testing.T) {
	svc, _, chat, flow := setup(t)
	ctx := t.Context()
	site, err := svc.ByApp(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	if !site.Enabled || len(site.Code) != CodeLength || site.Title != "helpdesk" || site.Description != "Answers." ||
		site.Icon != "🤖" || site.IconType != "emoji" || site.IconBackground != "#FFEAD5" || site.DefaultLanguage != "en-US" ||
		site.RequestsPerMinute != DefaultRequestsPerMinute || site.PasscodeRequired || len(site.AllowedOrigins) != 0 ||
		site.AppMode != apps.ModeChat || !site.ShowWorkflowSteps {
		t.Fatalf("%+v", site)
	}
	if got := PagePath(site.AppMode, site.Code); got != "/chat/"+site.Code {
		t.Fatal(got)
	}
	fs, _ := svc.ByApp(ctx, flow)
	if got := PagePath(fs.AppMode, fs.Code); got != "/workflow/"+fs.Code || fs.Code == site.Code {
		t.Fatal(got)
	}
	if got := PagePath(apps.ModeCompletion, "c"); got != "/completion/c" {
		t.Fatal(got)
	}
	byCode, err := svc.ByCode(ctx, site.Code)
	if err != nil || byCode.AppID != chat.ID {
		t.Fatalf("%+v %v", byCode, err)
	}
	for _, bad := range []string{"", "nope", "../etc/passwd", strings.Repeat("a", 100)} {
		if _, err := svc.ByCode(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	if _, err := svc.Apply(ctx, chat, Change{Disable: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ByCode(ctx, site.Code); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a disabled site: %v", err)
	}
}

// TestPassport: a passport authenticates its site's end user; a tampered one, one signed with
// another key, one of another site and one of a rotated, disabled or re-passcoded site do not.
func TestPassport(t *testing.T) {
	svc, st, chat, flow := setup(t)
	ctx := t.Context()
	site, _ := svc.ByApp(ctx, chat)
	iss, err := svc.Issue(ctx, site.Code, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !IsPassport(iss.Token) || iss.EndUserID == "" {
		t.Fatalf("%+v", iss)
	}
	pp, err := svc.Verify(ctx, iss.Token)
	if err != nil || pp.AppID != chat.ID || pp.SiteID != site.ID || pp.EndUserID != iss.EndUserID ||
		!strings.HasPrefix(pp.SessionID, SessionPrefix) || pp.RequestsPerMinute != DefaultRequestsPerMinute {
		t.Fatalf("%+v %v", pp, err)
	}

	// Tampering: the payload says another end user, the signature is cut, the prefix is gone.
	head, sig, _ := strings.Cut(iss.Token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(head, PassportPrefix))
	forged := PassportPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), iss.EndUserID, "someone-else", 1))) + "." + sig
	for name, tok := range map[string]string{
		"payload changed": forged, "signature cut": head + "." + sig[:10], "no signature": head,
		"no prefix": strings.TrimPrefix(iss.Token, PassportPrefix), "empty": "", "long": iss.Token + strings.Repeat("A", 2000),
	} {
		if _, err := svc.Verify(ctx, tok); !errors.Is(err, ErrInvalidPassport) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// Another server's key.
	other, err := New(ctx, newFakeStore(), fakeApps{chat.ID: chat})
	if err != nil {
		t.Fatal(err)
	}
	other.store = st
	if _, err := other.Verify(ctx, iss.Token); !errors.Is(err, ErrInvalidPassport) {
		t.Fatalf("another key: %v", err)
	}
	// A passport of another site does not carry its end user over.
	fs, _ := svc.ByApp(ctx, flow)
	again, err := svc.Issue(ctx, fs.Code, "", iss.Token)
	if err != nil || again.EndUserID == iss.EndUserID {
		t.Fatalf("another site's passport: %+v %v", again, err)
	}
	// The same site's keeps it.
	same, err := svc.Issue(ctx, site.Code, "", iss.Token)
	if err != nil || same.EndUserID != iss.EndUserID {
		t.Fatalf("a renewal: %+v %v", same, err)
	}

	// A new code ends it, and its end user is not carried over.
	rotated, err := svc.Apply(ctx, chat, Change{Rotate: true})
	if err != nil || rotated.Code == site.Code {
		t.Fatal(err)
	}
	if _, err := svc.Verify(ctx, iss.Token); !errors.Is(err, ErrInvalidPassport) {
		t.Fatalf("after a new code: %v", err)
	}
	if _, err := svc.Issue(ctx, site.Code, "", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old code: %v", err)
	}
	fresh, err := svc.Issue(ctx, rotated.Code, "", iss.Token)
	if err != nil || fresh.EndUserID == iss.EndUserID {
		t.Fatalf("renewing a passport of the old code: %+v %v", fresh, err)
	}
	// Disabling ends it, and enabling again does not bring it back.
	if _, err := svc.Apply(ctx, chat, Change{Disable: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Verify(ctx, fresh.Token); !errors.Is(err, ErrInvalidPassport) {
		t.Fatalf("disabled: %v", err)
	}
	if _, err := svc.Issue(ctx, rotated.Code, "", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("disabled: %v", err)
	}
	if _, err := svc.Apply(ctx, chat, Change{Enable: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Verify(ctx, fresh.Token); !errors.Is(err, ErrInvalidPassport) {
		t.Fatalf("enabled again: %v", err)
	}
	// A passcode is asked for and ends the passports before it.
	cur, _ := svc.Issue(ctx, rotated.Code, "", "")
	code := "s3cret"
	withCode, err := svc.Apply(ctx, chat, Change{Passcode: &code})
	if err != nil || !withCode.PasscodeRequired {
		t.Fatalf("%+v %v", withCode, err)
	}
	if _, err := svc.Verify(ctx, cur.Token); !errors.Is(err, ErrInvalidPassport) {
		t.Fatalf("after a passcode: %v", err)
	}
	for _, given := range []string{"", "wrong", "S3CRET"} {
		if _, err := svc.Issue(ctx, rotated.Code, given, ""); !errors.Is(err, ErrPasscodeRequired) {
			t.Fatalf("passcode %q: %v", given, err)
		}
	}
	if _, err := svc.Issue(ctx, rotated.Code, code, ""); err != nil {
		t.Fatal(err)
	}
	row, _ := st.SiteByApp(ctx, chat.ID)
	if strings.Contains(string(row.PasscodeHash), code) {
		t.Fatal("the passcode is stored in clear")
	}
	// Setting the same passcode again changes nothing.
	n := st.updates
	if _, err := svc.Apply(ctx, chat, Change{Passcode: &code}); err != nil || st.updates != n {
		t.Fatalf("the same passcode again: %v, %d updates", err, st.updates-n)
	}
}

// TestSiteSettings: the DSL `site` section sets a new site; the config `site` block wins, is
// applied again when it changes, and its settings cannot be changed by Apply.
func TestSiteSettings(t *testing.T) {
	st := newFakeStore()
	imported := &apps.App{ID: "app-i", Name: "imported", Mode: apps.ModeCompletion, Enabled: true,
		Extra: map[string]map[string]any{"": {"site": map[string]any{
			"title": "From the file", "copyright": "ACME", "privacy_policy": "https://acme.test/privacy",
			"default_language": "fr-FR", "show_workflow_steps": false, "custom_disclaimer": "Be nice.",
			"allowed_origins": []any{"https://acme.test/", "not an origin"}, "requests_per_minute": 10,
		}}}}
	title, rpm, enabled := "From the config", int64(5), true
	cfg := &apps.App{ID: "app-c", Name: "configured", Mode: apps.ModeChat, Enabled: true,
		SiteConfig: &config.AppSite{Title: &title, RequestsPerMinute: &rpm, Enabled: &enabled, AllowedOrigins: []string{"https://x.test"}}}
	svc, err := New(t.Context(), st, fakeApps{imported.ID: imported, cfg.ID: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got, err := svc.ByApp(ctx, imported)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "From the file" || got.Copyright != "ACME" || got.PrivacyPolicy != "https://acme.test/privacy" ||
		got.DefaultLanguage != "fr-FR" || got.ShowWorkflowSteps || got.CustomDisclaimer != "Be nice." ||
		len(got.AllowedOrigins) != 1 || got.AllowedOrigins[0] != "https://acme.test" || got.RequestsPerMinute != 10 {
		t.Fatalf("%+v", got)
	}
	c, err := svc.ByApp(ctx, cfg)
	if err != nil || c.Title != "From the config" || c.RequestsPerMinute != 5 || c.AllowedOrigins[0] != "https://x.test" {
		t.Fatalf("%+v %v", c, err)
	}
	n := st.updates
	if _, err := svc.Ensure(ctx, cfg); err != nil || st.updates != n {
		t.Fatalf("the same config again: %v, %d updates", err, st.updates-n)
	}
	title = "Changed"
	if c, _ := svc.ByApp(ctx, cfg); c.Title != "Changed" {
		t.Fatalf("a changed config: %+v", c)
	}
	for name, ch := range map[string]Change{"disable": {Disable: true}, "origins": {SetOrigins: true},
		"rpm": {RequestsPerMinute: &rpm}} {
		if _, err := svc.Apply(ctx, cfg, ch); !errors.Is(err, ErrConfigSet) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	p := "x"
	if _, err := svc.Apply(ctx, cfg, Change{Passcode: &p}); err != nil {
		t.Fatalf("a passcode the config does not set: %v", err)
	}
}

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c, err := NewCode()
		if err != nil || len(c) != CodeLength || !wellFormedCode(c) || seen[c] {
			t.Fatalf("%q %v", c, err)
		}
		seen[c] = true
	}
}
