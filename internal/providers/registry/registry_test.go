package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

// TestProviderCallTimeout: a provider's own call_timeout wins over the process-wide cap.
func TestProviderCallTimeout(t *testing.T) {
	t.Parallel()
	up := openaitest.NewServer()
	t.Cleanup(up.Close)
	up.On("stall", openaitest.Reply{FirstByteDelay: time.Hour})
	ps := New(func(string) string { return up.APIKey() }).WithCallTimeout(time.Hour)
	spec := models.ModelSpec{Provider: "quick", BaseURL: up.URL(), Timeout: time.Hour, CallTimeout: 200 * time.Millisecond, Name: "gpt-4o"}
	m, err := ps.ChatModel(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Chat(t.Context(), providers.ChatRequest{Model: "gpt-4o", Messages: []providers.Message{{Role: providers.RoleUser, Content: "stall"}}})
	var pe *providers.Error
	if !errors.As(err, &pe) || !errors.Is(err, providers.ErrTimeout) || !strings.Contains(pe.Message, "200ms limit") {
		t.Fatalf("err = %v, want the provider's 200ms cap", err)
	}
}
