// Package auth issues and checks Parley's Dify-style API keys.
//
// A key is a kind prefix ("app-" or "dataset-") followed by 43 base62
// characters encoding 32 bytes from crypto/rand. Only SHA-256(secret) and a
// short display prefix are stored; the secret is shown once, at creation.
// Lookup is by hash, confirmed with a constant-time comparison.
//
// An app key reaches one app. A knowledge ("dataset") key reaches every
// knowledge base of the workspace, as in Dify.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/internal/store"
)

// Kind is the kind of an API key.
type Kind string

// Key kinds. The values are Dify's ApiToken.type values and are stored as is.
const (
	// KindApp keys (secret prefix "app-") call the Service API of one app.
	KindApp Kind = store.APIKeyTypeApp
	// KindKnowledge keys (secret prefix "dataset-") reach every knowledge
	// base of the workspace.
	KindKnowledge Kind = store.APIKeyTypeDataset
)

// Prefix returns the secret prefix for the kind ("app-", "dataset-"), or ""
// for an unknown kind.
func (k Kind) Prefix() string {
	switch k {
	case KindApp, KindKnowledge:
		return string(k) + "-"
	}
	return ""
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	return k.Prefix() != ""
}

const (
	// secretBytes is the entropy of a key.
	secretBytes = 32
	// secretBodyLen is the base62 length of secretBytes: 62^43 > 2^256.
	secretBodyLen = 43
	// displayChars is how much of the secret body the display prefix shows.
	displayChars = 8
	// maxSecretLen bounds what Authenticate will hash; anything longer
	// cannot be a key and is rejected without work.
	maxSecretLen = 128
	// DefaultTouchInterval is how often at most a key's last-used time is
	// written.
	DefaultTouchInterval = time.Minute
	// touchTimeout bounds one background last-used write.
	touchTimeout = 5 * time.Second
)

// ErrInvalidKey is returned by [Service.Authenticate] for every rejected key:
// malformed, unknown, revoked or of the wrong kind. It deliberately says no
// more. The text is Dify's 401 message.
var ErrInvalidKey = errors.New("Access token is invalid") //nolint:staticcheck // ST1005: Dify's wire message, shown to clients as is.

// KeyStore is the storage [Service] needs; *store.Store satisfies it.
type KeyStore interface {
	CreateAPIKey(ctx context.Context, k store.APIKey) error
	APIKeyByHash(ctx context.Context, hash []byte) (store.APIKey, error)
	ListAPIKeys(ctx context.Context) ([]store.APIKey, error)
	RevokeAPIKey(ctx context.Context, id string) error
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
	APIKeyByID(ctx context.Context, id string) (store.APIKey, error)
	ExpireAPIKey(ctx context.Context, id string, at time.Time) error
}

var _ KeyStore = (*store.Store)(nil)

// Key describes an API key. It never holds the secret.
type Key struct {
	ID   string
	Kind Kind
	// AppID is the app an app key belongs to; empty for knowledge keys.
	AppID string
	// Prefix is safe to show and log, e.g. "app-AbCd1234".
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// ExpiresAt is when the key stops working (nil: never); Limits are its rate limits.
	ExpiresAt *time.Time
	Limits    store.Limits
}

// Live reports whether the key works at now: not revoked, not expired.
func (k Key) Live(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// Settings are what a new key is issued with besides its kind and app.
type Settings struct {
	// ExpiresIn is how long the key works (0: until revoked).
	ExpiresIn time.Duration
	Limits    store.Limits
}

// Service issues, checks, lists and revokes API keys. It is safe for
// concurrent use. Call [Service.Close] before closing the store.
type Service struct {
	store         KeyStore
	log           *slog.Logger
	now           func() time.Time
	touchInterval time.Duration

	mu      sync.Mutex
	touched map[string]time.Time // key id → last time we wrote last_used_at
	closed  bool
	pending sync.WaitGroup
}

// Option configures a [Service].
type Option func(*Service)

// WithLogger sets where failed last-used updates are logged (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(s *Service) { s.log = l }
}

// New returns a Service backed by st.
func New(st KeyStore, opts ...Option) *Service {
	s := &Service{
		store:         st,
		log:           slog.Default(),
		now:           time.Now,
		touchInterval: DefaultTouchInterval,
		touched:       make(map[string]time.Time),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Create issues a new key and returns its secret, which is not stored and
// cannot be recovered. appID is required for [KindApp] and must be empty for
// [KindKnowledge]. An unknown app gives an error wrapping store.ErrNotFound.
func (s *Service) Create(ctx context.Context, kind Kind, appID string) (secret string, key Key, err error) {
	return s.CreateWith(ctx, kind, appID, Settings{})
}

// CreateWith is Create with an expiry and rate limits.
func (s *Service) CreateWith(ctx context.Context, kind Kind, appID string, set Settings) (secret string, key Key, err error) {
	switch {
	case !kind.Valid():
		return "", Key{}, fmt.Errorf("auth: create key: unknown kind %q", kind)
	case kind == KindApp && appID == "":
		return "", Key{}, errors.New("auth: create key: an app key needs an app id")
	case kind == KindKnowledge && appID != "":
		return "", Key{}, errors.New("auth: create key: a knowledge key reaches every knowledge base and takes no app id")
	}
	body, err := randomBody()
	if err != nil {
		return "", Key{}, fmt.Errorf("auth: create key: %w", err)
	}
	secret = kind.Prefix() + body
	hash := sha256.Sum256([]byte(secret))
	rec := store.APIKey{
		ID:        uuid.NewString(),
		Type:      string(kind),
		AppID:     appID,
		TokenHash: hash[:],
		Prefix:    kind.Prefix() + body[:displayChars],
		CreatedAt: s.now().UTC().Truncate(time.Second),
		Limits:    set.Limits,
	}
	if set.ExpiresIn > 0 {
		at := rec.CreatedAt.Add(set.ExpiresIn)
		rec.ExpiresAt = &at
	}
	if err := s.store.CreateAPIKey(ctx, rec); err != nil {
		return "", Key{}, fmt.Errorf("auth: create key: %w", err)
	}
	return secret, keyFromRecord(rec), nil
}

// RandomSecret returns a new secret body as API keys have one: 32 bytes from crypto/rand as
// exactly 43 base62 characters. Other secrets Parley issues (the codes of MCP servers) are
// drawn the same way.
func RandomSecret() (string, error) { return randomBody() }

// randomBody draws secretBytes from crypto/rand and encodes them as exactly
// secretBodyLen base62 characters ([0-9a-zA-Z]): no punctuation, so a key
// selects with one double-click and survives any quoting.
func randomBody() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	enc := new(big.Int).SetBytes(b[:]).Text(62)
	return strings.Repeat("0", secretBodyLen-len(enc)) + enc, nil
}

// Authenticate returns the key for secret if it is a live key of kind want.
// Every rejection is [ErrInvalidKey]; other errors are storage failures.
//
// The secret is hashed before any format check, so a malformed key costs
// the same as a well-formed one up to the lookup. The stored hash is then
// compared in constant time. Recording last use happens in the background,
// at most once per touch interval per key, so it adds nothing to the request.
func (s *Service) Authenticate(ctx context.Context, secret string, want Kind) (Key, error) {
	if len(secret) > maxSecretLen {
		return Key{}, ErrInvalidKey
	}
	hash := sha256.Sum256([]byte(secret))
	if !wellFormed(secret, want) {
		return Key{}, ErrInvalidKey
	}
	rec, err := s.store.APIKeyByHash(ctx, hash[:])
	if errors.Is(err, store.ErrNotFound) {
		return Key{}, ErrInvalidKey
	}
	if err != nil {
		return Key{}, fmt.Errorf("auth: look up key: %w", err)
	}
	if subtle.ConstantTimeCompare(rec.TokenHash, hash[:]) != 1 ||
		!keyFromRecord(rec).Live(s.now()) ||
		Kind(rec.Type) != want ||
		(want == KindApp && rec.AppID == "") {
		return Key{}, ErrInvalidKey
	}
	s.touch(ctx, rec)
	return keyFromRecord(rec), nil
}

// wellFormed checks the public shape of a secret for kind want. Its timing
// can only reveal how a string is malformed, which its sender already knows.
func wellFormed(secret string, want Kind) bool {
	p := want.Prefix()
	if p == "" || !strings.HasPrefix(secret, p) || len(secret)-len(p) != secretBodyLen {
		return false
	}
	for _, c := range []byte(secret[len(p):]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// touch records last use in the background if the key has not been touched
// within the touch interval (by this process, or per the stored value).
func (s *Service) touch(ctx context.Context, rec store.APIKey) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	last, ok := s.touched[rec.ID]
	if !ok && rec.LastUsedAt != nil {
		last, ok = *rec.LastUsedAt, true
	}
	if ok && now.Sub(last) < s.touchInterval {
		return
	}
	s.touched[rec.ID] = now
	s.pending.Add(1)
	// The write must not be cut short when the request ends.
	bg := context.WithoutCancel(ctx)
	go func() {
		defer s.pending.Done()
		ctx, cancel := context.WithTimeout(bg, touchTimeout)
		defer cancel()
		if err := s.store.TouchAPIKey(ctx, rec.ID, now); err != nil {
			s.log.WarnContext(ctx, "record api key use", "key_id", rec.ID, "key_prefix", rec.Prefix, "error", err)
		}
	}()
}

// Close waits for pending last-used writes and stops issuing new ones. Call
// it before closing the store. The Service still authenticates afterwards.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.pending.Wait()
}

// List returns every key, revoked ones included, oldest first.
func (s *Service) List(ctx context.Context) ([]Key, error) {
	recs, err := s.store.ListAPIKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: list keys: %w", err)
	}
	keys := make([]Key, len(recs))
	for i, r := range recs {
		keys[i] = keyFromRecord(r)
	}
	return keys, nil
}

// Revoke revokes a key at once. An unknown or already revoked id gives an
// error wrapping store.ErrNotFound.
func (s *Service) Revoke(ctx context.Context, id string) error {
	if err := s.store.RevokeAPIKey(ctx, id); err != nil {
		return fmt.Errorf("auth: revoke key: %w", err)
	}
	return nil
}

// Rotate issues a new key in place of the live key id (its kind, app, limits, and what is left
// of its lifetime) and lets the old one work for grace more (0: it stops at once; never longer
// than it would have worked anyway). It returns the new key's secret.
func (s *Service) Rotate(ctx context.Context, id string, grace time.Duration) (secret string, key Key, err error) {
	old, err := s.store.APIKeyByID(ctx, id)
	if err != nil {
		return "", Key{}, fmt.Errorf("auth: rotate key: %w", err)
	}
	now := s.now()
	if !keyFromRecord(old).Live(now) {
		return "", Key{}, fmt.Errorf("auth: rotate key %s: it no longer works: %w", id, store.ErrNotFound)
	}
	set := Settings{Limits: old.Limits}
	if old.ExpiresAt != nil {
		set.ExpiresIn = old.ExpiresAt.Sub(now)
	}
	if secret, key, err = s.CreateWith(ctx, Kind(old.Type), old.AppID, set); err != nil {
		return "", Key{}, err
	}
	if err := s.store.ExpireAPIKey(ctx, id, now.Add(grace)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", Key{}, fmt.Errorf("auth: rotate key: end the old key: %w", err)
	}
	return secret, key, nil
}

func keyFromRecord(r store.APIKey) Key {
	return Key{
		ID:         r.ID,
		Kind:       Kind(r.Type),
		AppID:      r.AppID,
		Prefix:     r.Prefix,
		CreatedAt:  r.CreatedAt,
		LastUsedAt: r.LastUsedAt,
		RevokedAt:  r.RevokedAt,
		ExpiresAt:  r.ExpiresAt,
		Limits:     r.Limits,
	}
}
