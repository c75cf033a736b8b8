package sites

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/store"
)

// A passport is what a site's page calls the API with, as Dify's web app does: it names the
// site (and its version), the app and the end user, and is signed with the server's passport
// key (HMAC-SHA256). Its text is
//
//	pp-<base64url(payload JSON)>.<base64url(signature)>
//
// and the signature covers everything before the dot. Checking one costs a signature and one
// primary-key read of the site (is it still enabled, at the same version?), as checking an API
// key costs one read of the key.

// PassportPrefix starts every passport; API keys start with app- or dataset-.
const PassportPrefix = "pp-"

// PassportLifetime is how long a passport authenticates requests. Past it, the page asks for a
// new one, giving the old one so as to keep its end user.
const PassportLifetime = 24 * time.Hour

// maxPassportLen bounds what is decoded at all.
const maxPassportLen = 1024

// SessionPrefix starts the session id (the API's `user`) of the end users of sites.
const SessionPrefix = "web-"

// Passport is what a checked passport says.
type Passport struct {
	SiteID    string
	AppID     string
	EndUserID string
	// SessionID is the end user's session id: the `user` the API knows the end user by.
	SessionID string
	// RequestsPerMinute is the site's rate limit per end user (0: none), as the site has it now.
	RequestsPerMinute int64
}

type passportClaims struct {
	Site     string `json:"sid"`
	App      string `json:"aid"`
	EndUser  string `json:"uid"`
	Session  string `json:"ses"`
	Version  int64  `json:"ver"`
	IssuedAt int64  `json:"iat"`
	Expires  int64  `json:"exp"`
}

// Issued is a new passport.
type Issued struct {
	Token     string
	EndUserID string
	ExpiresAt time.Time
}

// Issue gives a passport of the enabled site with the code. When the site has a passcode it
// must be given ([ErrPasscodeRequired] otherwise). previous is a passport the page held before:
// when it is a genuine passport of the same site at its current version (expired or not), the
// new one keeps its end user, so conversations persist; otherwise a new anonymous end user is
// created.
func (s *Service) Issue(ctx context.Context, code, passcode, previous string) (Issued, error) {
	if !wellFormedCode(code) {
		return Issued{}, ErrNotFound
	}
	row, err := s.store.SiteByCode(ctx, code)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!row.Enabled || row.Code != code) {
		return Issued{}, ErrNotFound
	}
	if err != nil {
		return Issued{}, err
	}
	if _, err := s.apps.Get(ctx, row.AppID); errors.Is(err, apps.ErrNotFound) {
		return Issued{}, ErrNotFound
	} else if err != nil {
		return Issued{}, err
	}
	if row.PasscodeHash != nil && (passcode == "" || !checkPasscode(row.PasscodeHash, passcode)) {
		return Issued{}, ErrPasscodeRequired
	}
	var claims passportClaims
	if prev, ok := s.decode(previous); ok && prev.Site == row.ID && prev.App == row.AppID && prev.Version == row.Version &&
		strings.HasPrefix(prev.Session, SessionPrefix) {
		claims.EndUser, claims.Session = prev.EndUser, prev.Session
	} else {
		session, err := newSession()
		if err != nil {
			return Issued{}, err
		}
		u, err := s.store.EndUser(ctx, row.AppID, session)
		if err != nil {
			return Issued{}, err
		}
		claims.EndUser, claims.Session = u.ID, u.SessionID
	}
	now := time.Now()
	claims.Site, claims.App, claims.Version = row.ID, row.AppID, row.Version
	claims.IssuedAt, claims.Expires = now.Unix(), now.Add(PassportLifetime).Unix()
	token, err := s.sign(claims)
	if err != nil {
		return Issued{}, err
	}
	return Issued{Token: token, EndUserID: claims.EndUser, ExpiresAt: time.Unix(claims.Expires, 0)}, nil
}

// IsPassport reports whether a bearer token is meant as a passport (rather than an API key).
func IsPassport(token string) bool { return strings.HasPrefix(token, PassportPrefix) }

// Verify checks a passport: its signature, its lifetime, and that its site is still enabled at
// the version it was issued at. Every rejection is [ErrInvalidPassport]; other errors are
// storage failures.
func (s *Service) Verify(ctx context.Context, token string) (Passport, error) {
	c, ok := s.decode(token)
	if !ok || time.Now().Unix() >= c.Expires {
		return Passport{}, ErrInvalidPassport
	}
	row, err := s.store.SiteByID(ctx, c.Site)
	if errors.Is(err, store.ErrNotFound) {
		return Passport{}, ErrInvalidPassport
	}
	if err != nil {
		return Passport{}, err
	}
	if !row.Enabled || row.Version != c.Version || row.AppID != c.App {
		return Passport{}, ErrInvalidPassport
	}
	return Passport{SiteID: row.ID, AppID: row.AppID, EndUserID: c.EndUser, SessionID: c.Session,
		RequestsPerMinute: row.RequestsPerMinute}, nil
}

func (s *Service) sign(c passportClaims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	head := PassportPrefix + base64.RawURLEncoding.EncodeToString(payload)
	return head + "." + base64.RawURLEncoding.EncodeToString(s.mac(head)), nil
}

func (s *Service) mac(head string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(head))
	return m.Sum(nil)
}

// decode checks a passport's signature and returns its claims; ok is false for anything that
// is not a passport this server signed.
func (s *Service) decode(token string) (passportClaims, bool) {
	if len(token) > maxPassportLen || !strings.HasPrefix(token, PassportPrefix) {
		return passportClaims{}, false
	}
	head, sig, ok := strings.Cut(token, ".")
	if !ok {
		return passportClaims{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(head)) {
		return passportClaims{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(head, PassportPrefix))
	if err != nil {
		return passportClaims{}, false
	}
	var c passportClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.Site == "" || c.App == "" || c.EndUser == "" || c.Session == "" {
		return passportClaims{}, false
	}
	return c, true
}

// newSession draws the session id of a new end user of a site.
func newSession() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SessionPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}
