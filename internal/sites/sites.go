// Package sites keeps the web sites of apps (Dify's sites): every app has one, reached at a page
// URL whose last part is the site's code, with the settings the page shows (title, icon,
// copyright, privacy policy …), an optional passcode, the origins allowed to embed it and a rate
// limit per end user. It issues and checks the passports the page calls the API with
// (passport.go). See docs/web-pages.md.
package sites

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// Errors of the service.
var (
	// ErrNotFound: no enabled site has that code (or the app has no site).
	ErrNotFound = errors.New("site not found")
	// ErrPasscodeRequired: the site has a passcode, and none or a wrong one was given.
	ErrPasscodeRequired = errors.New("the site requires a passcode")
	// ErrInvalidPassport: the passport is malformed, forged, expired, or of a site that was
	// disabled, given a new code or a new passcode since.
	ErrInvalidPassport = errors.New("invalid passport")
	// ErrConfigSet: the setting is set by the app's `site` block in the config file.
	ErrConfigSet = errors.New("the setting is set by the config file")
)

// Defaults of a new site.
const (
	DefaultRequestsPerMinute = 60
	DefaultLanguage          = "en-US"
	// CodeLength is the length of a site code: 16 base62 characters, about 95 bits.
	CodeLength = 16
)

// Store is the storage the service needs; *store.Store satisfies it.
type Store interface {
	CreateSite(ctx context.Context, m store.Site) error
	UpdateSite(ctx context.Context, m store.Site) error
	SiteByApp(ctx context.Context, appID string) (store.Site, error)
	SiteByCode(ctx context.Context, code string) (store.Site, error)
	SiteByID(ctx context.Context, id string) (store.Site, error)
	EndUser(ctx context.Context, appID, sessionID string) (store.EndUser, error)
	SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

var _ Store = (*store.Store)(nil)

// Apps finds apps; *apps.Registry implements it.
type Apps interface {
	Get(ctx context.Context, id string) (*apps.App, error)
}

// Site is an app's site as the page shows it: the stored settings, with the app's own title,
// description and icon where the site sets none. It never holds the passcode.
type Site struct {
	ID    string
	Code  string
	AppID string
	// AppMode is the app's mode: chat, agent-chat, agent, advanced-chat, completion or
	// workflow.
	AppMode string
	// AppName is the app's name.
	AppName string
	Enabled bool
	Title   string
	// IconType is emoji, image or link ("" without an icon); IconURL is the icon of type link.
	IconType            string
	Icon                string
	IconURL             string
	IconBackground      string
	UseIconAsAnswerIcon bool
	Description         string
	Copyright           string
	PrivacyPolicy       string
	DefaultLanguage     string
	CustomDisclaimer    string
	InputPlaceholder    string
	ChatColorTheme      string
	ShowWorkflowSteps   bool
	PasscodeRequired    bool
	// AllowedOrigins are the origins allowed to embed the page (for its frame-ancestors);
	// "*" allows every origin; none: only the server's own.
	AllowedOrigins []string
	// RequestsPerMinute is the rate limit of each end user (0: none).
	RequestsPerMinute int64
	// Version grows with every change that ends the passports issued before it.
	Version int64
}

// PagePath is the path of the site's page, by the app's mode: /chat/CODE for the chat kinds,
// /completion/CODE and /workflow/CODE.
func PagePath(mode, code string) string {
	switch mode {
	case apps.ModeCompletion:
		return "/completion/" + code
	case apps.ModeWorkflow:
		return "/workflow/" + code
	}
	return "/chat/" + code
}

// Service keeps the sites and issues passports. It is safe for concurrent use.
type Service struct {
	store Store
	apps  Apps
	key   []byte
}

// PassportKeyName names the key that signs passports among the database's shared secrets.
const PassportKeyName = "site-passport-key"

// New returns a Service. The key signing passports is read from the database (created the
// first time), so every replica on it checks the passports any of them issued.
func New(ctx context.Context, st Store, a Apps) (*Service, error) {
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, err
	}
	key, err := st.SharedSecret(ctx, PassportKeyName, candidate)
	if err != nil {
		return nil, fmt.Errorf("sites: passport key: %w", err)
	}
	if len(key) < 32 {
		return nil, errors.New("sites: the passport key in the database is shorter than 32 bytes")
	}
	return &Service{store: st, apps: a, key: key}, nil
}

// ByCode returns the enabled site with the code; an unknown code, a disabled site and a site
// of an app that is gone give [ErrNotFound].
func (s *Service) ByCode(ctx context.Context, code string) (Site, error) {
	if !wellFormedCode(code) {
		return Site{}, ErrNotFound
	}
	row, err := s.store.SiteByCode(ctx, code)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!row.Enabled || row.Code != code) {
		return Site{}, ErrNotFound
	}
	if err != nil {
		return Site{}, err
	}
	a, err := s.apps.Get(ctx, row.AppID)
	if errors.Is(err, apps.ErrNotFound) {
		return Site{}, ErrNotFound
	}
	if err != nil {
		return Site{}, err
	}
	return view(row, a), nil
}

// ByApp returns the site of the app, creating it (enabled, with the app's DSL `site` section
// and config `site` block) when it has none.
func (s *Service) ByApp(ctx context.Context, a *apps.App) (Site, error) {
	row, err := s.Ensure(ctx, a)
	if err != nil {
		return Site{}, err
	}
	return view(row, a), nil
}

// view is the site as the page shows it.
func view(row store.Site, a *apps.App) Site {
	out := Site{
		ID: row.ID, Code: row.Code, AppID: row.AppID, AppMode: a.Mode, AppName: a.Name, Enabled: row.Enabled,
		Title: row.Title, Description: row.Description, Copyright: row.Copyright, PrivacyPolicy: row.PrivacyPolicy,
		DefaultLanguage: row.DefaultLanguage, CustomDisclaimer: row.CustomDisclaimer, InputPlaceholder: row.InputPlaceholder,
		ChatColorTheme: row.ChatColorTheme, ShowWorkflowSteps: row.ShowWorkflowSteps, PasscodeRequired: row.PasscodeHash != nil,
		AllowedOrigins: slices.Clone(row.AllowedOrigins), RequestsPerMinute: row.RequestsPerMinute, Version: row.Version,
		UseIconAsAnswerIcon: a.Icon.UseAsAnswerIcon,
	}
	if out.Title == "" {
		out.Title = a.Name
	}
	if out.Description == "" {
		out.Description = a.Description
	}
	if out.DefaultLanguage == "" {
		out.DefaultLanguage = DefaultLanguage
	}
	if row.Icon != "" {
		out.Icon, out.IconType = row.Icon, "emoji"
		if strings.HasPrefix(row.Icon, "https://") || strings.HasPrefix(row.Icon, "http://") {
			out.IconType, out.IconURL = "link", row.Icon
		}
	} else {
		out.Icon, out.IconType = a.Icon.Icon, a.Icon.Type
		if a.Icon.Type == "link" {
			out.IconURL = a.Icon.Icon
		}
	}
	out.IconBackground = row.IconBackground
	if out.IconBackground == "" {
		out.IconBackground = a.Icon.Background
	}
	if out.AllowedOrigins == nil {
		out.AllowedOrigins = []string{}
	}
	return out
}

// Ensure returns the stored site of the app, creating it the first time: enabled, limited to
// DefaultRequestsPerMinute per end user, with the settings of the app's DSL `site` section, and
// then of its config `site` block. The config block is applied again every time (the server
// calls Ensure for every app when it starts), so it wins over what was set otherwise; a change
// of its passcode or its enabled switch ends the passports issued before.
func (s *Service) Ensure(ctx context.Context, a *apps.App) (store.Site, error) {
	row, err := s.store.SiteByApp(ctx, a.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		row, err = s.create(ctx, a)
		if err != nil {
			return store.Site{}, err
		}
	case err != nil:
		return store.Site{}, err
	}
	if a.SiteConfig == nil {
		return row, nil
	}
	next := row
	next.AllowedOrigins = slices.Clone(row.AllowedOrigins)
	applyConfig(&next, a.SiteConfig)
	if err := setPasscode(&next, a.SiteConfig.Passcode); err != nil {
		return store.Site{}, err
	}
	if next.Enabled != row.Enabled || !slices.Equal(next.PasscodeHash, row.PasscodeHash) {
		next.Version++
	}
	if sameSettings(next, row) {
		return row, nil
	}
	if err := s.store.UpdateSite(ctx, next); err != nil {
		return store.Site{}, err
	}
	return next, nil
}

func (s *Service) create(ctx context.Context, a *apps.App) (store.Site, error) {
	row := store.Site{ID: store.NewID(), AppID: a.ID, Version: 1, Enabled: true, ShowWorkflowSteps: true,
		DefaultLanguage: DefaultLanguage, RequestsPerMinute: DefaultRequestsPerMinute, AllowedOrigins: []string{}}
	applyDSL(&row, DSLSection(a))
	for range 5 {
		code, err := NewCode()
		if err != nil {
			return store.Site{}, err
		}
		row.Code = code
		err = s.store.CreateSite(ctx, row)
		if err == nil {
			return row, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return store.Site{}, err
		}
		// Another process created the app's site first (or, unlikely, the code is taken).
		if got, gerr := s.store.SiteByApp(ctx, a.ID); gerr == nil {
			return got, nil
		}
	}
	return store.Site{}, errors.New("sites: no free site code after 5 draws")
}

// Change is what `parley apps site` changes; nil and false leave a setting alone.
type Change struct {
	Enable, Disable, Rotate bool
	// Passcode sets the passcode ("" removes it).
	Passcode *string
	// AllowedOrigins replaces the allowed origins.
	AllowedOrigins    []string
	SetOrigins        bool
	RequestsPerMinute *int64
}

// Apply changes the app's site (creating it first when it has none) and returns it. A setting
// that the app's config `site` block sets cannot be changed here ([ErrConfigSet]): the config
// would set it back at the next start. A new code, disabling the site and a new passcode end
// the passports issued before.
func (s *Service) Apply(ctx context.Context, a *apps.App, ch Change) (Site, error) {
	if c := a.SiteConfig; c != nil {
		switch {
		case (ch.Enable || ch.Disable) && c.Enabled != nil:
			return Site{}, fmt.Errorf("enabled: %w", ErrConfigSet)
		case ch.Passcode != nil && c.Passcode != nil:
			return Site{}, fmt.Errorf("passcode: %w", ErrConfigSet)
		case ch.SetOrigins && c.AllowedOrigins != nil:
			return Site{}, fmt.Errorf("allowed_origins: %w", ErrConfigSet)
		case ch.RequestsPerMinute != nil && c.RequestsPerMinute != nil:
			return Site{}, fmt.Errorf("requests_per_minute: %w", ErrConfigSet)
		}
	}
	row, err := s.Ensure(ctx, a)
	if err != nil {
		return Site{}, err
	}
	next := row
	bump := false
	switch {
	case ch.Enable && !row.Enabled:
		next.Enabled = true
	case ch.Disable && row.Enabled:
		next.Enabled, bump = false, true
	}
	if ch.Rotate {
		code, err := NewCode()
		if err != nil {
			return Site{}, err
		}
		next.Code, bump = code, true
	}
	if ch.Passcode != nil {
		if err := setPasscode(&next, ch.Passcode); err != nil {
			return Site{}, err
		}
		bump = bump || !slices.Equal(next.PasscodeHash, row.PasscodeHash)
	}
	if ch.SetOrigins {
		next.AllowedOrigins = normalizeOrigins(ch.AllowedOrigins)
	}
	if ch.RequestsPerMinute != nil {
		if *ch.RequestsPerMinute < 0 {
			return Site{}, errors.New("sites: requests per minute must not be negative")
		}
		next.RequestsPerMinute = *ch.RequestsPerMinute
	}
	if bump {
		next.Version++
	}
	if !sameSettings(next, row) {
		if err := s.store.UpdateSite(ctx, next); err != nil {
			return Site{}, err
		}
	}
	return view(next, a), nil
}

func sameSettings(a, b store.Site) bool {
	return slices.Equal(a.AllowedOrigins, b.AllowedOrigins) && slices.Equal(a.PasscodeHash, b.PasscodeHash) &&
		a.Code == b.Code && a.Version == b.Version && a.Enabled == b.Enabled && a.Title == b.Title && a.Icon == b.Icon &&
		a.IconBackground == b.IconBackground && a.Description == b.Description && a.Copyright == b.Copyright &&
		a.PrivacyPolicy == b.PrivacyPolicy && a.DefaultLanguage == b.DefaultLanguage && a.CustomDisclaimer == b.CustomDisclaimer &&
		a.InputPlaceholder == b.InputPlaceholder && a.ChatColorTheme == b.ChatColorTheme &&
		a.ShowWorkflowSteps == b.ShowWorkflowSteps && a.RequestsPerMinute == b.RequestsPerMinute
}

// setPasscode sets the passcode's hash (p empty: none); a passcode the stored hash already
// matches keeps its hash, so applying the config again changes nothing.
func setPasscode(row *store.Site, p *string) error {
	if p == nil {
		return nil
	}
	if *p == "" {
		row.PasscodeHash = nil
		return nil
	}
	if row.PasscodeHash != nil && checkPasscode(row.PasscodeHash, *p) {
		return nil
	}
	h, err := hashPasscode(*p)
	if err != nil {
		return err
	}
	row.PasscodeHash = h
	return nil
}

// Passcodes are hashed with PBKDF2-SHA256 and a random salt: [passcodeV1][salt][key].
const (
	passcodeV1         = 1
	passcodeSalt       = 16
	passcodeKeyLen     = 32
	passcodeIterations = 50_000
)

func hashPasscode(p string) ([]byte, error) {
	salt := make([]byte, passcodeSalt)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	key, err := pbkdf2.Key(sha256.New, p, salt, passcodeIterations, passcodeKeyLen)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{passcodeV1}, salt...), key...), nil
}

func checkPasscode(hash []byte, p string) bool {
	if len(hash) != 1+passcodeSalt+passcodeKeyLen || hash[0] != passcodeV1 {
		return false
	}
	key, err := pbkdf2.Key(sha256.New, p, hash[1:1+passcodeSalt], passcodeIterations, passcodeKeyLen)
	return err == nil && subtle.ConstantTimeCompare(key, hash[1+passcodeSalt:]) == 1
}

// NewCode draws a site code: CodeLength characters of [0-9A-Za-z] from crypto/rand.
func NewCode() (string, error) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	out := make([]byte, 0, CodeLength)
	buf := make([]byte, 32)
	for len(out) < CodeLength {
		if _, err := rand.Read(buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			// 248 = 4 × 62: rejecting the bytes above keeps every character equally likely.
			if b < 248 && len(out) < CodeLength {
				out = append(out, alphabet[b%62])
			}
		}
	}
	return string(out), nil
}

// wellFormedCode reports whether code could be a site code (any length up to 64 of URL-safe
// characters, so that a code set by hand in a future version still reads).
func wellFormedCode(code string) bool {
	if code == "" || len(code) > 64 {
		return false
	}
	for _, c := range []byte(code) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// normalizeOrigins drops trailing slashes, empty entries and duplicates.
func normalizeOrigins(in []string) []string {
	out := []string{}
	for _, o := range in {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// applyConfig writes what the config `site` block sets over row.
func applyConfig(row *store.Site, c *config.AppSite) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	if c.Enabled != nil {
		row.Enabled = *c.Enabled
	}
	set(&row.Title, c.Title)
	set(&row.Icon, c.Icon)
	set(&row.IconBackground, c.IconBackground)
	set(&row.Description, c.Description)
	set(&row.Copyright, c.Copyright)
	set(&row.PrivacyPolicy, c.PrivacyPolicy)
	set(&row.DefaultLanguage, c.DefaultLanguage)
	set(&row.CustomDisclaimer, c.CustomDisclaimer)
	set(&row.InputPlaceholder, c.InputPlaceholder)
	set(&row.ChatColorTheme, c.ChatColorTheme)
	if c.ShowWorkflowSteps != nil {
		row.ShowWorkflowSteps = *c.ShowWorkflowSteps
	}
	if c.AllowedOrigins != nil {
		row.AllowedOrigins = normalizeOrigins(c.AllowedOrigins)
	}
	if c.RequestsPerMinute != nil {
		row.RequestsPerMinute = *c.RequestsPerMinute
	}
}

// DSLSection is the `site` section of an imported app's DSL file (kept with the app's other
// top-level sections), nil when it has none. Dify's exports have no such section; a file
// written by hand or by another tool may carry one, with the field names of Dify's Site model.
func DSLSection(a *apps.App) map[string]any {
	if a == nil || a.Extra == nil {
		return nil
	}
	m, _ := a.Extra[""]["site"].(map[string]any)
	return m
}

// applyDSL writes the settings of a DSL `site` section over row; values of the wrong type are
// ignored, and so are the passcode and the code (a file is no place for secrets, and a new app
// gets a new code).
func applyDSL(row *store.Site, m map[string]any) {
	if m == nil {
		return
	}
	str := func(dst *string, key string) {
		if v, ok := m[key].(string); ok {
			*dst = v
		}
	}
	str(&row.Title, "title")
	str(&row.Icon, "icon")
	str(&row.IconBackground, "icon_background")
	str(&row.Description, "description")
	str(&row.Copyright, "copyright")
	str(&row.PrivacyPolicy, "privacy_policy")
	str(&row.DefaultLanguage, "default_language")
	str(&row.CustomDisclaimer, "custom_disclaimer")
	str(&row.InputPlaceholder, "input_placeholder")
	str(&row.ChatColorTheme, "chat_color_theme")
	if v, ok := m["show_workflow_steps"].(bool); ok {
		row.ShowWorkflowSteps = v
	}
	if v, ok := m["enable_site"].(bool); ok {
		row.Enabled = v
	}
	if list, ok := m["allowed_origins"].([]any); ok {
		var origins []string
		for _, o := range list {
			if s, ok := o.(string); ok && config.ValidOrigin(strings.TrimRight(s, "/")) {
				origins = append(origins, s)
			}
		}
		row.AllowedOrigins = normalizeOrigins(origins)
	}
	switch v := m["requests_per_minute"].(type) {
	case int:
		if v >= 0 {
			row.RequestsPerMinute = int64(v)
		}
	case int64:
		if v >= 0 {
			row.RequestsPerMinute = v
		}
	case float64:
		if v >= 0 && v == float64(int64(v)) {
			row.RequestsPerMinute = int64(v)
		}
	}
}
