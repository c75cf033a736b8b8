package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestSQLiteWriteBurst: a fresh server on SQLite takes a burst of new conversations from many
// keep-alive connections at once, each answer followed by the durable job that names its
// conversation. Every request is answered, every conversation gets its generated name, and the
// server never meets its own database lock: its writes go one at a time through one writer path,
// so no write fails with SQLITE_BUSY ("database is locked") and no naming gives up.
func TestSQLiteWriteBurst(t *testing.T) {
	if binary == "" {
		t.Skip("needs control of the server process")
	}
	t.Parallel()
	p := startParley(t, storetest.SQLite)
	const clients, each = 32, 6
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	type result struct {
		user string
		err  error
	}
	results := make(chan result, clients)
	var start sync.WaitGroup
	start.Add(1)
	for i := range clients {
		go func() {
			c, err := client.New(strings.TrimSuffix(p.URL, "/v1"), client.WithAPIKey(p.AppKey), client.WithHTTPClient(hc))
			user := fmt.Sprintf("burst-%d", i)
			if err != nil {
				results <- result{user, err}
				return
			}
			start.Wait()
			for j := range each {
				r, err := c.SendChatMessageWithResponse(context.Background(), nil, chatBody(fmt.Sprintf("burst %d.%d", i, j), user, false))
				if err == nil && r.JSON200 == nil {
					err = fmt.Errorf("status %d: %s", r.StatusCode(), r.Body)
				}
				if err != nil {
					results <- result{user, err}
					return
				}
			}
			results <- result{user, nil}
		}()
	}
	start.Done()
	var users []string
	for range clients {
		r := <-results
		if r.err != nil {
			t.Errorf("%s: %v", r.user, r.err)
		}
		users = append(users, r.user)
	}
	if t.Failed() {
		t.FailNow()
	}
	c := newClient(t, p, p.AppKey)
	for _, user := range users {
		eventually(t, "the conversations of "+user+" named", func() (bool, any) {
			r, err := c.ListConversationsWithResponse(context.Background(), &client.ListConversationsParams{User: &user, Limit: ptr(100)})
			if err != nil || r.JSON200 == nil {
				return false, err
			}
			named := 0
			for _, conv := range r.JSON200.Data {
				if conv.Name == generatedTitle {
					named++
				}
			}
			return named == each, fmt.Sprintf("%d of %d named", named, len(r.JSON200.Data))
		})
	}
	for _, bad := range []string{"SQLITE_BUSY", "database is locked", "generate conversation name", "save conversation name"} {
		if strings.Contains(p.logs.String(), bad) {
			t.Errorf("the server logged %q during the burst", bad)
		}
	}
}
