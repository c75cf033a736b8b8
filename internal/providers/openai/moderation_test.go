package openai_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestModerate: one POST <base>/moderations with every input, one verdict per input in order;
// an upstream error keeps its kind; no inputs, no request.
func TestModerate(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	s.On("awful", openaitest.Reply{Flagged: true})
	s.On("moderation-quota", openaitest.Reply{Status: http.StatusTooManyRequests})
	c := newClient(t, s)
	got, err := c.Moderate(t.Context(), openaitest.DefaultModerationModel, []string{"nice", "an awful thing", "fine"})
	if err != nil || !reflect.DeepEqual(got, []bool{false, true, false}) {
		t.Fatalf("got %v, %v", got, err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/moderations" || len(reqs[0].Input) != 3 {
		t.Fatalf("requests %+v", reqs)
	}
	if got, err := c.Moderate(t.Context(), openaitest.DefaultModerationModel, nil); err != nil || len(got) != 0 || len(s.Requests()) != 1 {
		t.Fatalf("no inputs: %v %v", got, err)
	}
	_, err = c.Moderate(t.Context(), openaitest.DefaultModerationModel, []string{"moderation-quota"})
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.Kind != providers.KindQuota {
		t.Fatalf("429: %v", err)
	}
}

// TestModerateOddServers: an Azure-style base URL keeps its api-version; a response that does
// not give one flagged verdict per input is an invocation error, not a pass.
func TestModerateOddServers(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen string
	)
	serve := func(body string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = r.URL.String()
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	c := openai.New(openai.Config{Name: "azure", BaseURL: serve(`{"results":[{"flagged":true}]}`) + "/openai/deployments/mod?api-version=2024-06-01", APIKey: "k"})
	got, err := c.Moderate(t.Context(), "m", []string{"x"})
	mu.Lock()
	path := seen
	mu.Unlock()
	if err != nil || !got[0] || path != "/openai/deployments/mod/moderations?api-version=2024-06-01" {
		t.Fatalf("azure: %v %v %s", got, err, path)
	}
	for name, body := range map[string]string{
		"no results":     `{"id":"x"}`,
		"too few":        `{"results":[{"flagged":false}]}`,
		"no flagged":     `{"results":[{"categories":{}},{"flagged":false}]}`,
		"not json":       `<html>`,
		"results object": `{"results":{"flagged":true}}`,
	} {
		c := openai.New(openai.Config{Name: "odd", BaseURL: serve(body), APIKey: "k"})
		_, err := c.Moderate(t.Context(), "m", []string{"a", "b"})
		var perr *providers.Error
		if !errors.As(err, &perr) || perr.Kind != providers.KindInvocation || !strings.HasPrefix(perr.Message, "[odd]") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
