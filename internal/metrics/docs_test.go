package metrics

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
)

// everything returns the label names of every metric family a server with Redis serves, by
// family name, each recorded once.
func everything(t *testing.T) map[string][]string {
	t.Helper()
	m := New()
	db := sql.OpenDB(nopConnector{})
	t.Cleanup(func() { db.Close() })
	err := m.Register(collectors.NewDBStatsCollector(db, "sqlite"),
		RedisPools(map[string]interface{ PoolStats() *redis.PoolStats }{"main": fakePool{}}),
		JobQueue(func(context.Context) ([]QueueCount, error) {
			return []QueueCount{{Kind: "k", State: "queued", Jobs: 1, OldestDue: time.Now()}}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	m.Request("GET", "/v1/parameters", 200, time.Millisecond)
	m.StreamOpened()
	m.RunAdmitted("a", 1)
	m.RunRejected("a")
	m.RunFinished("a", "chat", "normal", time.Second)
	m.FirstToken("a", "chat", time.Second)
	m.ModelCalled(ModelCall{App: "a", Provider: "p", Model: "m", Operation: "chat", Duration: time.Second, FirstToken: time.Second,
		InputTokens: 1, OutputTokens: 1, Cost: 1, Currency: "USD", Outcome: "ok"})
	m.ModelCalled(ModelCall{Provider: "p", Model: "m", Operation: "chat", Outcome: "error", ErrorKind: "quota"})
	m.JobRan("k", "completed", time.Second, time.Second)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range fams {
		var labels []string
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		out[f.GetName()] = labels
	}
	return out
}

type nopConnector struct{}

func (nopConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("no database")
}
func (nopConnector) Driver() driver.Driver { return nil }

var metricName = regexp.MustCompile(`\b(?:parley|go_sql|go|process)_[a-z_]+[a-z]`)

// family is the family a series name belongs to (a histogram's _bucket, _count and _sum are its
// family's).
func family(fams map[string][]string, name string) (string, bool) {
	if _, ok := fams[name]; ok {
		return name, true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if _, ok := fams[base]; ok {
				return base, true
			}
		}
	}
	return "", false
}

// The dashboard queries only metrics Parley serves, grouped by labels they have.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	fams := everything(t)
	raw, err := os.ReadFile("../../docs/grafana/parley.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct{ List []struct{ Definition string } }
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	by := regexp.MustCompile(`by \(([^)]*)\)`)
	exprs := 0
	check := func(where, expr string) {
		exprs++
		var labels []string
		for _, name := range metricName.FindAllString(expr, -1) {
			f, ok := family(fams, name)
			if !ok {
				t.Errorf("%s: %s is not a metric Parley serves", where, name)
				continue
			}
			labels = append(labels, fams[f]...)
		}
		for _, m := range by.FindAllStringSubmatch(expr, -1) {
			for l := range strings.SplitSeq(m[1], ",") {
				l = strings.TrimSpace(l)
				if l != "le" && l != "instance" && l != "job" && !slices.Contains(labels, l) {
					t.Errorf("%s: grouped by %q, which its metrics do not have", where, l)
				}
			}
		}
	}
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			check(p.Title, target.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			check("variable", v.Definition)
		}
	}
	if exprs < 30 {
		t.Errorf("only %d queries in the dashboard", exprs)
	}
}

// docs/observability.md names every metric Parley serves, and no other.
func TestDocsNameEveryMetric(t *testing.T) {
	fams := everything(t)
	raw, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for name := range fams {
		if strings.HasPrefix(name, "parley_") && !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, "…"+strings.TrimPrefix(name, "parley_redis_pool")) {
			t.Errorf("docs/observability.md does not name %s", name)
		}
	}
	for _, name := range metricName.FindAllString(doc, -1) {
		if !strings.HasPrefix(name, "parley_") {
			continue
		}
		if _, ok := family(fams, name); !ok && !strings.HasSuffix(name, "_") {
			t.Errorf("docs/observability.md names %s, which Parley does not serve", name)
		}
	}
}
