package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// replicasSide is one deployment of the replicas phase: n replicas on a fresh PostgreSQL
// database and one Redis, behind a round-robin proxy in this process.
type replicasSide struct {
	n        int
	blocking []window
	// open is how many hanging streams were open at once (their first message arrived) out of
	// the ones asked for, and openTime how long opening them took.
	open, asked int
	openErr     error
	openTime    time.Duration
	// rss is the replicas' summed RSS with the streams open, idle before they were opened.
	rss, idle int64
}

// roundRobin is a reverse proxy that sends each request to the next replica in turn, as a load
// balancer without sticky sessions would.
func roundRobin(bases []string) (*httptest.Server, error) {
	var targets []*url.URL
	for _, b := range bases {
		u, err := url.Parse(strings.TrimSuffix(b, "/v1"))
		if err != nil {
			return nil, err
		}
		targets = append(targets, u)
	}
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(targets[(next.Add(1)-1)%uint64(len(targets))])
		},
		FlushInterval: -1,
		Transport: &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 2 * time.Minute,
			DisableCompression: true},
	}
	return httptest.NewServer(rp), nil
}

// freshDatabase creates an empty database on the PostgreSQL server of admin and returns its URL
// and a function that drops it.
func freshDatabase(ctx context.Context, admin string) (string, func(), error) {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", nil, err
	}
	name := "parley_bench_" + strings.ToLower(rand.Text()[:12])
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		db.Close()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = db.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		db.Close()
	}, nil
}

// replicasPhase measures blocking chats per second and open streams with 1 and with 3
// replicas on PostgreSQL and Redis, each deployment behind the same round-robin proxy.
func replicasPhase(ctx context.Context, o options, bin, tmp string, settings serverSettings) ([]*replicasSide, error) {
	settings.debugAddr = "" // replicas run side by side: one listener address would clash
	var sides []*replicasSide
	for _, n := range []int{1, 3} {
		side, err := replicasRun(ctx, o, bin, filepath.Join(tmp, fmt.Sprintf("replicas-%d", n)), settings, n)
		if side != nil {
			sides = append(sides, side)
		}
		if err != nil {
			return sides, err
		}
	}
	return sides, nil
}

func replicasRun(ctx context.Context, o options, bin, dir string, settings serverSettings, n int) (*replicasSide, error) {
	dbURL, drop, err := freshDatabase(ctx, o.postgres)
	if err != nil {
		return nil, err
	}
	defer drop()
	s := settings
	s.extraEnv = []string{"PARLEY_DATABASE_URL=" + dbURL, "PARLEY_REDIS_URL=" + o.redis,
		"PARLEY_REDIS_KEY_PREFIX=bench-" + strings.ToLower(rand.Text()[:8]) + ":"}
	first, err := startParley(ctx, bin, filepath.Join(dir, "0"), s)
	if err != nil {
		return nil, err
	}
	ps := []*parley{first}
	defer func() {
		for _, p := range ps {
			p.stop()
		}
	}()
	for i := 1; i < n; i++ {
		dataDir := filepath.Join(dir, fmt.Sprint(i), "data")
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return nil, err
		}
		p, err := spawnParley(ctx, bin, dataDir, parleyEnv(dataDir, filepath.Join(dir, "0", "parley.yaml"), s))
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	var bases []string
	for _, p := range ps {
		bases = append(bases, p.base)
	}
	proxy, err := roundRobin(bases)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	front := proxy.URL + "/v1"
	logf("replicas phase: %d replica(s) behind a round-robin proxy at %s", n, front)
	side := &replicasSide{n: n, asked: o.open}
	through := &target{name: "parley", client: newClient(max(o.workers, o.open) + 64), url: front + "/chat-messages", key: first.key}
	no := false
	bodies := make([][]byte, o.workers)
	for w := range o.workers {
		bodies[w] = chatBody(blockMarker+" Say hello.", fmt.Sprintf("rep-%d-%d", n, w), "blocking", "", &no)
	}
	do := func(ctx context.Context, w int) error { return blockingCall(ctx, through, bodies[w], nil) }
	rounds := min(o.blockRounds, 3)
	for round := 0; round <= rounds; round++ {
		d := o.duration
		if round == 0 {
			d = min(o.duration, time.Second)
		}
		win := blockingWindow(ctx, o.workers, d, do)
		if ctx.Err() != nil {
			return side, ctx.Err()
		}
		logf("replicas %d: blocking round %d/%d %7.0f req/s  p50 %s p99 %s  errors %d", n, round, rounds, win.rate(),
			fmtUS(win.p50), fmtUS(win.p99), win.errs)
		if win.firstErr != nil {
			logf("  error: %v", win.firstErr)
		}
		if round > 0 {
			side.blocking = append(side.blocking, win)
		}
	}
	for _, p := range ps {
		if !p.alive() {
			return side, fmt.Errorf("a replica exited during the blocking phase; log:\n%s", p.logTail())
		}
	}

	// Open streams: o.open hanging streams through the proxy, then each stopped through it.
	for _, p := range ps {
		if st, err := readProc(p.pid); err == nil {
			side.idle += st.RSS
		}
	}
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		tasks  [][2]string // task id, user
		opened = make(chan struct{}, o.open)
		errMu  sync.Mutex
	)
	t0 := time.Now()
	for i := range o.open {
		user := fmt.Sprintf("rep-open-%d", i)
		body := chatBody(hangMarker+" Keep going.", user, "streaming", "", nil)
		wg.Go(func() {
			_, err := streamParley(streamCtx, through, body, false, func(taskID string) {
				mu.Lock()
				tasks = append(tasks, [2]string{taskID, user})
				mu.Unlock()
				opened <- struct{}{}
			})
			if err != nil && streamCtx.Err() == nil {
				errMu.Lock()
				if side.openErr == nil {
					side.openErr = err
				}
				errMu.Unlock()
				opened <- struct{}{}
			}
		})
	}
	deadline := time.After(60 * time.Second)
	for range o.open {
		select {
		case <-opened:
		case <-deadline:
		case <-ctx.Done():
			return side, ctx.Err()
		}
	}
	side.openTime = time.Since(t0)
	mu.Lock()
	side.open = len(tasks)
	open := append([][2]string(nil), tasks...)
	mu.Unlock()
	for _, p := range ps {
		if st, err := readProc(p.pid); err == nil {
			side.rss += st.RSS
		}
	}
	logf("replicas %d: %d/%d streams open in %s, RSS %s (idle %s)", n, side.open, o.open, side.openTime.Round(time.Millisecond), mb(side.rss), mb(side.idle))
	// Stop them through the proxy, a few at a time; a stream whose stop fails is cut by cancel.
	stops := make(chan [2]string)
	var sw sync.WaitGroup
	for range 32 {
		sw.Go(func() {
			for task := range stops {
				_ = stopTask(ctx, through, front, task[0], task[1])
			}
		})
	}
	for _, task := range open {
		stops <- task
	}
	close(stops)
	sw.Wait()
	cancel()
	wg.Wait()
	return side, nil
}
