package openai_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/providers/openai"
	"github.com/parleyhq/parley/internal/providers/openaitest"
)

func TestTranscribe(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	got, err := c.Transcribe(context.Background(), openaitest.DefaultTranscriptionModel, "note.mp3", "audio/mpeg", []byte("spoken words"))
	if err != nil || got != "spoken words" {
		t.Fatalf("Transcribe = %q, %v", got, err)
	}
	got, err = c.Transcribe(context.Background(), openaitest.DefaultTranscriptionModel, "note.wav", "audio/wav", []byte{0, 1, 2, 0xff})
	if err != nil || got != "4 bytes of audio" {
		t.Fatalf("Transcribe of binary audio = %q, %v", got, err)
	}
	_, err = c.Transcribe(context.Background(), "no-such-model", "a.mp3", "audio/mpeg", []byte("x"))
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.Kind != providers.KindModel {
		t.Fatalf("unknown model: %v", err)
	}
	bad := newClient(t, s, func(c *openai.Config) { c.APIKey = "wrong" })
	if _, err := bad.Transcribe(context.Background(), openaitest.DefaultTranscriptionModel, "a.mp3", "audio/mpeg", []byte("x")); !errors.As(err, &perr) || perr.Kind != providers.KindCredentials {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestSynthesize(t *testing.T) {
	t.Parallel()
	s := newFake(t)
	c := newClient(t, s)
	body, ct, err := c.Synthesize(context.Background(), openaitest.DefaultSpeechModel, "Hello there.", "nova")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	audio, err := io.ReadAll(body)
	if err != nil || ct != "audio/mpeg" || string(audio) != openaitest.SpeechHeader+"nova:Hello there." {
		t.Fatalf("Synthesize = %q (%s), %v", audio, ct, err)
	}
	_, _, err = c.Synthesize(context.Background(), "no-such-model", "Hi.", "nova")
	var perr *providers.Error
	if !errors.As(err, &perr) || perr.Kind != providers.KindModel || strings.Contains(perr.SafeMessage(), openaitest.DefaultAPIKey) {
		t.Fatalf("unknown model: %v", err)
	}
}
