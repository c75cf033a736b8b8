package apps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/parleyhq/parley/internal/config"
	"github.com/parleyhq/parley/internal/store"
)

// Errors of the registry. They say what happened; the messages of the errors wrapping them say
// to whom.
var (
	// ErrNotFound: no live app has that id or name.
	ErrNotFound = errors.New("no such app")
	// ErrNameTaken: another app already has the name.
	ErrNameTaken = errors.New("the name is taken")
	// ErrConfigApp: the app is defined by the config file, so it cannot be changed here.
	ErrConfigApp = errors.New("the app is defined by the config file")
	// ErrInvalid: the app cannot be stored as it is.
	ErrInvalid = errors.New("invalid app")
)

// Store is the storage the registry reads and writes; *store.Store satisfies it.
type Store interface {
	AppRevision(ctx context.Context, id string) (int64, error)
	AppsRevision(ctx context.Context) (int64, error)
	AppByID(ctx context.Context, id string) (store.App, error)
	AppByName(ctx context.Context, name string) (store.App, error)
	ListApps(ctx context.Context) ([]store.App, error)
	CreateApp(ctx context.Context, name, mode, definition string) (store.App, error)
	DeleteApp(ctx context.Context, id string) error
	PublishApp(ctx context.Context, id string) (store.AppVersion, error)
	CreateAgentApp(ctx context.Context, name, mode, definition, agentName, draft string) (store.App, error)
	BoundAgent(ctx context.Context, appID string) (store.Agent, error)
	SaveAgentDraft(ctx context.Context, appID, name, draft string) error
	PublishAgent(ctx context.Context, appID string) (store.AgentVersion, error)
	ArchiveAgent(ctx context.Context, appID string) error
}

var _ Store = (*store.Store)(nil)

// Registry finds apps by id or name, whatever their source. Config apps are held in memory for
// the life of the process. Imported apps are read through to the store: each lookup asks the
// store for the app's revision (one primary-key read) and decodes the definition again only
// when it changed, so an import, delete or publish by another process is served at once.
type Registry struct {
	config    map[string]*App // config apps by id
	names     map[string]*App // config apps by name
	maxActive func(appLimit int) int
	st        Store // nil: config apps only

	mu       sync.RWMutex
	imported map[string]cached // imported apps by id
	list     []*App            // imported apps, by name, as of listRev
	listRev  int64
}

// cached is an imported app as of a revision; app is nil for a row that is not served (a
// config app the config file no longer declares).
type cached struct {
	app *App
	rev int64
}

// NewRegistry pairs the config's apps with their store ids (name → id). maxActive resolves an
// app's own limit against the server-wide ones (config.Config.MaxActiveRequests). Without
// [Registry.WithStore] it knows the config apps only.
func NewRegistry(cfgApps []config.App, ids map[string]string, maxActive func(appLimit int) int) (*Registry, error) {
	r := &Registry{
		config: make(map[string]*App, len(cfgApps)), names: make(map[string]*App, len(cfgApps)),
		maxActive: maxActive, imported: map[string]cached{}, listRev: -1,
	}
	for _, c := range cfgApps {
		id, ok := ids[c.Name]
		if !ok {
			return nil, fmt.Errorf("apps: app %q has no id in the store", c.Name)
		}
		a := FromConfig(c)
		a.ID = id
		a.MaxActiveRequests = maxActive(c.MaxActiveRequests)
		r.config[id], r.names[c.Name] = a, a
	}
	return r, nil
}

// WithStore makes the registry serve and manage the apps stored in st as well. Call it once,
// before the registry is used.
func (r *Registry) WithStore(st Store) *Registry {
	r.st = st
	return r
}

// ByID returns the app with id if it is a config app or an imported app this registry has
// already loaded, without asking the store. Serving code uses [Registry.Get].
func (r *Registry) ByID(id string) (*App, bool) {
	if a, ok := r.config[id]; ok {
		return a, true
	}
	r.mu.RLock()
	c, ok := r.imported[id]
	r.mu.RUnlock()
	return c.app, ok && c.app != nil
}

// Get returns the live app with id, reading an imported app through to the store. An unknown or
// deleted app gives an error wrapping [ErrNotFound]. The app must not be modified.
func (r *Registry) Get(ctx context.Context, id string) (*App, error) {
	if a, ok := r.config[id]; ok {
		return a, nil
	}
	if r.st == nil {
		return nil, fmt.Errorf("app %s: %w", id, ErrNotFound)
	}
	rev, err := r.st.AppRevision(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		r.mu.Lock()
		delete(r.imported, id)
		r.mu.Unlock()
		return nil, fmt.Errorf("app %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	r.mu.RLock()
	c, ok := r.imported[id]
	r.mu.RUnlock()
	if !ok || c.rev != rev {
		row, err := r.st.AppByID(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("apps: %w", err)
		}
		if c, err = r.load(ctx, row); err != nil {
			return nil, err
		}
	}
	if c.app == nil {
		return nil, fmt.Errorf("app %s: %w", id, ErrNotFound)
	}
	return c.app, nil
}

// load decodes an imported app's row and caches it by its revision.
func (r *Registry) load(ctx context.Context, row store.App) (cached, error) {
	c := cached{rev: row.Revision}
	if row.Source == store.AppSourceImport && row.DeletedAt == nil {
		a, err := r.decode(ctx, row)
		if err != nil {
			return cached{}, err
		}
		c.app = a
	}
	r.mu.Lock()
	if old, ok := r.imported[row.ID]; !ok || old.rev <= c.rev {
		r.imported[row.ID] = c
	}
	r.mu.Unlock()
	return c, nil
}

func (r *Registry) decode(ctx context.Context, row store.App) (*App, error) {
	a, err := decodeDefinition(row.Definition)
	if err != nil {
		return nil, fmt.Errorf("apps: app %s (%q): stored definition: %w", row.ID, row.Name, err)
	}
	a.ID, a.Source, a.PublishedVersion = row.ID, SourceImport, row.PublishedVersionID
	a.Name, a.Mode, a.CreatedAt, a.Limits = row.Name, row.Mode, row.CreatedAt, row.Limits
	a.MaxActiveRequests = r.maxActive(0)
	if a.Mode == ModeAgent {
		if a.Bound, err = r.boundAgent(ctx, row); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// boundAgent loads the Agent bound to an Agent app: nil when it has none. Every change of the
// agent moves the app's revision, so it is read again exactly when the app is.
func (r *Registry) boundAgent(ctx context.Context, row store.App) (*BoundAgent, error) {
	ag, err := r.st.BoundAgent(ctx, row.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	b := &BoundAgent{ID: ag.ID}
	if b.Draft, err = DecodeAgentConfig(ag.Draft); err != nil {
		return nil, fmt.Errorf("apps: agent of app %s (%q): stored draft: %w", row.ID, row.Name, err)
	}
	if ag.Active != nil {
		if b.Published, err = DecodeAgentConfig(ag.Active.Config); err != nil {
			return nil, fmt.Errorf("apps: agent of app %s (%q): stored version %d: %w", row.ID, row.Name, ag.Active.Version, err)
		}
		b.Version = ag.Active.Version
	}
	return b, nil
}

// ByName returns the live app with name, config apps first. An unknown name gives an error
// wrapping [ErrNotFound].
func (r *Registry) ByName(ctx context.Context, name string) (*App, error) {
	if a, ok := r.names[name]; ok {
		return a, nil
	}
	if r.st != nil {
		row, err := r.st.AppByName(ctx, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("apps: %w", err)
		case row.Source == store.AppSourceImport:
			c, err := r.load(ctx, row)
			if err != nil {
				return nil, err
			}
			return c.app, nil
		}
	}
	return nil, fmt.Errorf("app %q: %w", name, ErrNotFound)
}

// List returns every app served: the config apps, then the imported ones, each group by name.
func (r *Registry) List(ctx context.Context) ([]*App, error) {
	out := make([]*App, 0, len(r.config))
	for _, a := range r.config {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *App) int { return strings.Compare(a.Name, b.Name) })
	imported, err := r.importedApps(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, imported...), nil
}

// importedApps returns the live imported apps, re-read only when some app changed.
func (r *Registry) importedApps(ctx context.Context) ([]*App, error) {
	if r.st == nil {
		return nil, nil
	}
	rev, err := r.st.AppsRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	r.mu.RLock()
	list, listRev := r.list, r.listRev
	r.mu.RUnlock()
	if listRev == rev {
		return list, nil
	}
	rows, err := r.st.ListApps(ctx)
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	list = list[:0:0]
	for _, row := range rows {
		if row.Source != store.AppSourceImport {
			continue
		}
		r.mu.RLock()
		c, ok := r.imported[row.ID]
		r.mu.RUnlock()
		if !ok || c.rev != row.Revision {
			if c, err = r.load(ctx, row); err != nil {
				return nil, err
			}
		}
		list = append(list, c.app)
	}
	r.mu.Lock()
	r.list, r.listRev = list, rev
	r.mu.Unlock()
	return list, nil
}

// UsingKnowledgeBase counts the apps that retrieve from the named knowledge base.
func (r *Registry) UsingKnowledgeBase(ctx context.Context, name string) (int, error) {
	all, err := r.List(ctx)
	n := 0
	for _, a := range all {
		if a.UsesKnowledgeBase(name) {
			n++
		}
	}
	return n, err
}

// Create stores an imported app and returns it as served, with its id. The name must be free
// among the apps of both sources: a taken one gives an error wrapping [ErrNameTaken] that says
// who holds it.
func (r *Registry) Create(ctx context.Context, a *App) (*App, error) {
	if r.st == nil {
		return nil, errors.New("apps: create: no store")
	}
	if !validName(a.Name) {
		return nil, fmt.Errorf("%w: name %q: give 1 to 255 characters, without control characters or surrounding spaces", ErrInvalid, a.Name)
	}
	if !slices.Contains(Modes(), a.Mode) {
		return nil, fmt.Errorf("%w: unknown mode %q", ErrInvalid, a.Mode)
	}
	if _, ok := r.names[a.Name]; ok {
		return nil, fmt.Errorf("app %q: %w by an app of the config file; import under another name (--name)", a.Name, ErrNameTaken)
	}
	def, err := encodeDefinition(a)
	if err != nil {
		return nil, err
	}
	var row store.App
	if a.Mode == ModeAgent {
		// An imported Agent app brings its Agent, which starts as an unpublished draft.
		if a.Bound == nil || a.Bound.Draft == nil {
			return nil, fmt.Errorf("%w: an Agent app needs the Agent it is bound to", ErrInvalid)
		}
		draft, derr := EncodeAgentConfig(a.Bound.Draft)
		if derr != nil {
			return nil, derr
		}
		row, err = r.st.CreateAgentApp(ctx, a.Name, a.Mode, def, agentName(a.Bound.Draft, a.Name), draft)
	} else {
		row, err = r.st.CreateApp(ctx, a.Name, a.Mode, def)
	}
	if errors.Is(err, store.ErrConflict) {
		holder, herr := r.st.AppByName(ctx, a.Name)
		switch {
		case herr != nil:
			return nil, fmt.Errorf("app %q: %w", a.Name, ErrNameTaken)
		case holder.Source == store.AppSourceConfig:
			return nil, fmt.Errorf("app %q: %w by an app the config file declared before (id %s), which keeps its keys and history; "+
				"delete it with `parley apps delete %s` or import under another name (--name)", a.Name, ErrNameTaken, holder.ID, quoteArg(a.Name))
		default:
			return nil, fmt.Errorf("app %q: %w by an imported app; delete that one first (`parley apps delete %s`) or import under another name (--name)",
				a.Name, ErrNameTaken, quoteArg(a.Name))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	c, err := r.load(ctx, row)
	if err != nil {
		return nil, err
	}
	return c.app, nil
}

// Delete deletes the imported app called name, and revokes its keys. Config apps cannot be
// deleted (they come back with the file), except one the config file no longer declares.
func (r *Registry) Delete(ctx context.Context, name string) error {
	if _, ok := r.names[name]; ok {
		return fmt.Errorf("cannot delete %q: %w; remove it from the file instead", name, ErrConfigApp)
	}
	if r.st == nil {
		return fmt.Errorf("app %q: %w", name, ErrNotFound)
	}
	row, err := r.st.AppByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("app %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("apps: %w", err)
	}
	if err := r.st.DeleteApp(ctx, row.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("app %q: %w", name, ErrNotFound)
		}
		return fmt.Errorf("apps: %w", err)
	}
	return nil
}

// Published is the outcome of [Registry.Publish].
type Published struct {
	App *App
	// Versioned is false for the kinds that have no versions: they are served as stored, and
	// publishing them changes nothing.
	Versioned bool
	// VersionID and Version identify the new version of a versioned app.
	VersionID string
	Version   int64
}

// Publish publishes the imported app called name: for the kinds with versions it snapshots the
// definition as the next version, which the API then runs.
func (r *Registry) Publish(ctx context.Context, name string) (Published, error) {
	if _, ok := r.names[name]; ok {
		return Published{}, fmt.Errorf("cannot publish %q: %w, which it is served from as it is; it has no versions", name, ErrConfigApp)
	}
	a, err := r.ByName(ctx, name)
	if err != nil {
		return Published{}, err
	}
	if !a.Versioned() {
		return Published{App: a}, nil
	}
	if a.Mode == ModeAgent {
		return r.publishAgent(ctx, a)
	}
	v, err := r.st.PublishApp(ctx, a.ID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Published{}, fmt.Errorf("app %q: %w", name, ErrNotFound)
		}
		return Published{}, fmt.Errorf("apps: %w", err)
	}
	if a, err = r.Get(ctx, a.ID); err != nil {
		return Published{}, err
	}
	return Published{App: a, Versioned: true, VersionID: v.ID, Version: v.Version}, nil
}

// quoteArg quotes a name for a shell command line when it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// encodeDefinition is how an imported app is stored: the model as JSON, without what the store
// row itself holds (id, source, published version, effective cap).
func encodeDefinition(a *App) (string, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return string(b), nil
}

// decodeDefinition reads a stored definition. Numbers inside free-form values (completion
// parameters, kept DSL fields) come back as int when integral and float64 otherwise, as YAML
// decoding gives them.
func decodeDefinition(def string) (*App, error) {
	var a App
	if err := decodeJSON(def, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// decodeJSON decodes a stored JSON value into v (a pointer to a struct), with the numbers of
// free-form values as YAML decoding gives them.
func decodeJSON(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	normalizeNumbers(reflect.ValueOf(v).Elem())
	return nil
}

// normalizeNumbers replaces every json.Number held in an interface value under v.
func normalizeNumbers(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalizeNumbers(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalizeNumbers(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			normalizeNumbers(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			if e.Kind() == reflect.Interface {
				if !e.IsNil() {
					v.SetMapIndex(k, reflect.ValueOf(plainNumbers(e.Interface())))
				}
				continue
			}
			if e.Kind() == reflect.Map || e.Kind() == reflect.Slice {
				normalizeNumbers(e) // maps and slices share their backing store
			}
		}
	case reflect.Interface:
		if !v.IsNil() && v.CanSet() {
			v.Set(reflect.ValueOf(plainNumbers(v.Interface())))
		}
	}
}

// plainNumbers returns x with every json.Number turned into an int or a float64.
func plainNumbers(x any) any {
	switch t := x.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil && int64(int(i)) == i {
			return int(i)
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = plainNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = plainNumbers(e)
		}
		return t
	}
	return x
}
