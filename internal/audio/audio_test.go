package audio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
)

func newService(t *testing.T, modelList string) *Service {
	t.Helper()
	up, file := openaitest.NewConfigured(t, `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
`+modelList)
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	return New(catalog, registry.New(catalog.APIKey), nil)
}

const bothModels = `      - {name: whisper-1, type: speech2text}
      - {name: tts-1, type: tts}
`

func speakingApp() *apps.App {
	a := &apps.App{ID: "a", Mode: apps.ModeChat}
	a.Features.SpeechToText.Enabled = true
	a.Features.TextToSpeech = apps.TextToSpeech{Enabled: true, Voice: "nova"}
	return a
}

func TestSynthesizeLongTextInPieces(t *testing.T) {
	t.Parallel()
	s := newService(t, bothModels)
	sentence := strings.Repeat("word ", 99) + "end. " // 500 characters
	text := strings.Repeat(sentence, 9)               // 4500: two calls
	body, ct, err := s.Synthesize(context.Background(), speakingApp(), text, "")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	audio, err := io.ReadAll(body)
	if err != nil || ct != "audio/mpeg" {
		t.Fatalf("read: %v (%s)", err, ct)
	}
	pieces := splitSpeech(text, maxSpeechInput)
	if len(pieces) != 2 || strings.Join(pieces, "") != text {
		t.Fatalf("pieces: %d", len(pieces))
	}
	want := openaitest.SpeechHeader + "nova:" + pieces[0] + openaitest.SpeechHeader + "nova:" + pieces[1]
	if string(audio) != want {
		t.Fatalf("audio of %d bytes, want %d", len(audio), len(want))
	}
}

func TestSplitSpeech(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		max  int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"One. Two three four.", 10, []string{"One.", " Two ", "three ", "four."}},
		{"no sentence end here", 8, []string{"no ", "sentence", " end ", "here"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"你好。世界你好", 4, []string{"你好。", "世界你好"}},
	} {
		got := splitSpeech(tc.text, tc.max)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitSpeech(%q, %d) = %q, want %q", tc.text, tc.max, got, tc.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	off := &apps.App{ID: "a", Mode: apps.ModeChat}
	s := newService(t, bothModels)
	if _, err := s.Transcribe(ctx, off, "a.mp3", "audio/mpeg", []byte("x")); !errors.Is(err, ErrSpeechToTextDisabled) {
		t.Errorf("speech to text off: %v", err)
	}
	if _, _, err := s.Synthesize(ctx, off, "Hi.", ""); !errors.Is(err, ErrTextToSpeechDisabled) {
		t.Errorf("text to speech off: %v", err)
	}
	if _, _, err := s.Synthesize(ctx, speakingApp(), "  ", ""); !errors.Is(err, ErrNoText) {
		t.Errorf("no text: %v", err)
	}
	none := newService(t, "      - {name: gpt-4o, type: llm, context_size: 4096}\n")
	if _, err := none.Transcribe(ctx, speakingApp(), "a.mp3", "audio/mpeg", []byte("x")); !errors.Is(err, ErrNoSpeechToTextModel) {
		t.Errorf("no speech2text model: %v", err)
	}
	if _, _, err := none.Synthesize(ctx, speakingApp(), "Hi.", ""); !errors.Is(err, ErrNoTextToSpeechModel) {
		t.Errorf("no tts model: %v", err)
	}
	for ct, ok := range map[string]bool{"audio/mpeg": true, "audio/WAV": true, "audio/webm; codecs=opus": true, "audio/ogg": false, "text/plain": false, "": false} {
		if err := CheckType(ct); (err == nil) != ok {
			t.Errorf("CheckType(%q) = %v", ct, err)
		}
	}
}

func TestSpeakChunks(t *testing.T) {
	t.Parallel()
	s := newService(t, bothModels)
	var got []byte
	err := s.Speak(context.Background(), speakingApp(), "Read me.", func(b []byte) error {
		got = append(got, b...)
		return nil
	})
	if err != nil || string(got) != openaitest.SpeechHeader+"nova:Read me." {
		t.Fatalf("Speak = %q, %v", got, err)
	}
	stop := errors.New("client gone")
	if err := s.Speak(context.Background(), speakingApp(), "Read me.", func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("a refused chunk: %v", err)
	}
}
