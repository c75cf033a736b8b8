package audiotools_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers/openaitest"
	"github.com/parleyhq/parley/internal/providers/registry"
	"github.com/parleyhq/parley/internal/tools"
	"github.com/parleyhq/parley/internal/tools/audiotools"
)

// newSet is the audio tools over the audio service of a server whose one provider (the fake
// upstream) has a speech-to-text and a text-to-speech model.
func newSet(t *testing.T) *audiotools.Set {
	t.Helper()
	up, file := openaitest.NewConfigured(t, `
providers:
  - name: openai
    base_url: ${UPSTREAM}
    api_key_env: UPSTREAM_KEY
    models:
      - {name: whisper-1, type: speech2text}
      - {name: tts-1, type: tts}
`)
	catalog := models.NewCatalog(file.Providers, up.Getenv)
	return audiotools.New(audio.New(catalog, registry.New(catalog.APIKey), nil))
}

func find(t *testing.T, s *audiotools.Set, provider, name string, configured map[string]any) tools.Tool {
	t.Helper()
	tl, err := s.Find(context.Background(), tools.Ref{Type: tools.TypeBuiltin, ProviderID: provider, Name: name, Configured: configured})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestTTS: tts reads the text aloud with the model and voice Dify's parameters name (a model of
// another workspace's provider is the server's default) and answers the audio as a file.
func TestTTS(t *testing.T) {
	t.Parallel()
	s := newSet(t)
	for _, configured := range []map[string]any{
		{"model": "openai#tts-1", "voice#openai#tts-1": "nova"},
		{"model": "langgenius/openai/openai#tts-1", "voice#langgenius/openai/openai#tts-1": "nova"},
	} {
		res, err := find(t, s, "audio", "tts", configured).Invoke(context.Background(), json.RawMessage(`{"text": "Hello there."}`))
		if err != nil || res.IsError || res.Text != "Audio generated successfully" || len(res.Files) != 1 {
			t.Fatalf("%v: %+v %v", configured, res, err)
		}
		f := res.Files[0]
		if f.MIMEType != "audio/mpeg" || f.Name != "speech.mp3" || string(f.Data) != openaitest.SpeechHeader+"nova:Hello there." {
			t.Fatalf("file %q %q %q", f.Name, f.MIMEType, f.Data)
		}
	}
	res, _ := find(t, s, "langgenius/audio/audio", "tts", nil).Invoke(context.Background(), json.RawMessage(`{"text": " "}`))
	if !res.IsError {
		t.Fatalf("no text: %+v", res)
	}
}

// TestASR: asr writes down the audio file the app gives it; a file that is not audio is
// answered as Dify's tool answers it; a call with no file says so.
func TestASR(t *testing.T) {
	t.Parallel()
	s := newSet(t)
	tl := find(t, s, "audio", "asr", map[string]any{"model": "openai#whisper-1"})
	if ft, ok := tl.(tools.FileTaker); !ok || len(ft.FileParameters()) != 1 || ft.FileParameters()[0] != "audio_file" {
		t.Fatal("asr does not take its audio file")
	}
	file := func(mime, data string) string {
		b, _ := json.Marshal(map[string]any{"audio_file": map[string]any{"filename": "note.mp3", "mime_type": mime, "type": "audio",
			"size": len(data), "data_base64": base64.StdEncoding.EncodeToString([]byte(data))}})
		return string(b)
	}
	res, err := tl.Invoke(context.Background(), json.RawMessage(file("audio/mpeg", "meet at noon")))
	if err != nil || res.IsError || res.Text != "meet at noon" {
		t.Fatalf("%+v %v", res, err)
	}
	notAudio := strings.Replace(file("text/plain", "x"), `"type":"audio"`, `"type":"document"`, 1)
	if res, _ := tl.Invoke(context.Background(), json.RawMessage(notAudio)); res.Text != "not a valid audio file" {
		t.Fatalf("a document: %+v", res)
	}
	if res, _ := tl.Invoke(context.Background(), json.RawMessage(`{}`)); !res.IsError || !strings.Contains(res.Text, "no audio file") {
		t.Fatalf("no file: %+v", res)
	}
}
