// Package audio is speech to text and text to speech for apps, as Dify's audio operations do
// them: transcription through the workspace's speech2text model and synthesis through its tts
// model (the first of each type the config declares), both over OpenAI-compatible APIs. It also
// reads streamed answers aloud for apps with text-to-speech auto-play (run.Speech).
package audio

import (
	"context"
	"errors"
	"io"
	"mime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// MaxAudioBytes is the largest file speech to text takes (Dify's 30 MB).
const MaxAudioBytes = 30 << 20

// DefaultVoice is the voice used when neither the request nor the app names one: the first
// voice of OpenAI's speech models, which Dify also picks first.
const DefaultVoice = "alloy"

// Errors of the service; server/ answers them with Dify's codes.
var (
	ErrSpeechToTextDisabled = errors.New("Speech to text is disabled.")
	ErrNoSpeechToTextModel  = errors.New("Provider not support speech to text.")
	ErrTextToSpeechDisabled = errors.New("TTS is not enabled")
	ErrNoTextToSpeechModel  = errors.New("Provider not support text to speech.")
	ErrNoText               = errors.New("Text is required")
	ErrNoAudio              = errors.New("Please upload your audio.")
	ErrUnsupportedType      = errors.New("Audio type not allowed.")
	ErrTooLarge             = errors.New("Audio size larger than 30 mb")
)

// allowedTypes are the content types speech to text takes, as Dify lists them.
var allowedTypes = []string{"audio/mp3", "audio/mp4", "audio/mpeg", "audio/mpga", "audio/m4a", "audio/wav", "audio/webm", "audio/amr"}

// CheckType refuses an upload whose content type is not one Dify takes.
func CheckType(contentType string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !slices.Contains(allowedTypes, strings.ToLower(mt)) {
		return ErrUnsupportedType
	}
	return nil
}

// Catalog lists configured models; *models.Catalog implements it.
type Catalog interface {
	ByType(t models.Type) []models.ProviderModels
	Lookup(t models.Type, provider, name string) (models.ModelSpec, error)
}

// Clients gives the clients of audio models; registry.Set implements it.
type Clients interface {
	Transcriber(spec models.ModelSpec) (providers.Transcriber, error)
	Synthesizer(spec models.ModelSpec) (providers.Synthesizer, error)
}

// Messages finds stored messages; *store.Store implements it.
type Messages interface {
	Message(ctx context.Context, appID, endUserID, id string) (store.Message, error)
}

// ErrMessageNotFound: text to speech names a message the user does not have.
var ErrMessageNotFound = errors.New("Message Not Exists.")

// Service runs the audio operations. It is safe for concurrent use.
type Service struct {
	catalog  Catalog
	clients  Clients
	messages Messages
}

var _ run.Speech = (*Service)(nil)

// New returns a Service.
func New(catalog Catalog, clients Clients, messages Messages) *Service {
	return &Service{catalog: catalog, clients: clients, messages: messages}
}

// Answer returns the answer of the end user's message id, to read aloud.
func (s *Service) Answer(ctx context.Context, appID, endUserID, id string) (string, error) {
	m, err := s.messages.Message(ctx, appID, endUserID, id)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrMessageNotFound
	}
	if err != nil {
		return "", err
	}
	return m.Answer, nil
}

// model is the first configured model of type t: the workspace's default model of that type.
func (s *Service) model(t models.Type) (models.ModelSpec, bool) {
	for _, p := range s.catalog.ByType(t) {
		for _, m := range p.Models {
			if spec, err := s.catalog.Lookup(t, p.Provider, m.Name); err == nil {
				return spec, true
			}
		}
	}
	return models.ModelSpec{}, false
}

// Transcribe returns the text spoken in an uploaded file (already checked with CheckType and
// against MaxAudioBytes). The app's speech-to-text feature must be on.
func (s *Service) Transcribe(ctx context.Context, app *apps.App, filename, contentType string, data []byte) (string, error) {
	if !app.Features.SpeechToText.Enabled {
		return "", ErrSpeechToTextDisabled
	}
	return s.TranscribeWith(ctx, "", filename, contentType, data)
}

// TranscribeWith returns the text spoken in data with the speech-to-text model ref names
// (see ModelRef; "" for the default), whatever an app's features say: the audio tools call it.
func (s *Service) TranscribeWith(ctx context.Context, ref, filename, contentType string, data []byte) (string, error) {
	spec, ok := s.modelRef(models.TypeSpeech2Text, ref)
	if !ok {
		return "", ErrNoSpeechToTextModel
	}
	c, err := s.clients.Transcriber(spec)
	if err != nil {
		return "", err
	}
	return c.Transcribe(ctx, spec.Name, filename, contentType, data)
}

// modelRef is the model of type t that ref names: Dify's "provider#model", the provider as
// configured here or as a plugin id whose last segment is (langgenius/openai/openai). An empty
// ref, or one whose provider or model is not configured here (an imported app names its
// workspace's), is the default model of that type.
func (s *Service) modelRef(t models.Type, ref string) (models.ModelSpec, bool) {
	if provider, name, ok := strings.Cut(ref, "#"); ok && name != "" {
		if spec, err := s.catalog.Lookup(t, provider, name); err == nil {
			return spec, true
		}
		if i := strings.LastIndexByte(provider, '/'); i >= 0 {
			if spec, err := s.catalog.Lookup(t, provider[i+1:], name); err == nil {
				return spec, true
			}
		}
	}
	return s.model(t)
}

// Synthesize reads text aloud for app: the audio streams from the reader (closed by the caller),
// of the returned content type. voice may be empty: the app's, else DefaultVoice.
func (s *Service) Synthesize(ctx context.Context, app *apps.App, text, voice string) (io.ReadCloser, string, error) {
	if !app.Features.TextToSpeech.Enabled {
		return nil, "", ErrTextToSpeechDisabled
	}
	if voice == "" {
		voice = app.Features.TextToSpeech.Voice
	}
	return s.SynthesizeWith(ctx, "", text, voice)
}

// SynthesizeWith reads text aloud with the text-to-speech model ref names (see modelRef; ""
// for the default) and voice (DefaultVoice if empty), whatever an app's features say: the audio
// tools call it. The audio streams from the reader (closed by the caller), of the returned
// content type.
func (s *Service) SynthesizeWith(ctx context.Context, ref, text, voice string) (io.ReadCloser, string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, "", ErrNoText
	}
	spec, ok := s.modelRef(models.TypeTTS, ref)
	if !ok {
		return nil, "", ErrNoTextToSpeechModel
	}
	c, err := s.clients.Synthesizer(spec)
	if err != nil {
		return nil, "", err
	}
	if voice == "" {
		voice = DefaultVoice
	}
	pieces := splitSpeech(text, maxSpeechInput)
	body, ct, err := c.Synthesize(ctx, spec.Name, pieces[0], voice)
	if err != nil || len(pieces) == 1 {
		return body, ct, err
	}
	next := func(text string) (io.ReadCloser, error) {
		b, _, err := c.Synthesize(ctx, spec.Name, text, voice)
		return b, err
	}
	return &chained{cur: body, rest: pieces[1:], next: next}, ct, nil
}

// maxSpeechInput is the most text one speech call reads, in characters: OpenAI's speech API takes
// at most 4096. A longer text is read in pieces, one call after the other, as one audio stream.
const maxSpeechInput = 4000

// splitSpeech cuts text into pieces of at most max characters, at the last sentence end of each
// piece when there is one, else at its last space, else anywhere.
func splitSpeech(text string, max int) []string {
	var out []string
	for utf8.RuneCountInString(text) > max {
		// The byte offset just past the first max characters.
		limit := 0
		for range max {
			_, size := utf8.DecodeRuneInString(text[limit:])
			limit += size
		}
		cut := strings.LastIndexAny(text[:limit], ".!?\n。！？")
		if cut >= 0 {
			_, size := utf8.DecodeRuneInString(text[cut:])
			cut += size
		} else if cut = strings.LastIndexByte(text[:limit], ' ') + 1; cut <= 0 {
			cut = limit
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return append(out, text)
}

// chained reads the audio of several speech calls as one stream, making each call when the one
// before it is read.
type chained struct {
	cur  io.ReadCloser
	rest []string
	next func(text string) (io.ReadCloser, error)
}

func (c *chained) Read(p []byte) (int, error) {
	for {
		n, err := c.cur.Read(p)
		if !errors.Is(err, io.EOF) || len(c.rest) == 0 {
			return n, err
		}
		_ = c.cur.Close()
		text := c.rest[0]
		c.rest = c.rest[1:]
		if c.cur, err = c.next(text); err != nil {
			c.cur, c.rest = io.NopCloser(strings.NewReader("")), nil
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (c *chained) Close() error { return c.cur.Close() }

// speakChunk is the most audio one tts_message carries.
const speakChunk = 16 << 10

// Speak implements run.Speech: it synthesizes text with the app's voice and passes the audio on
// as it arrives, in pieces of at most speakChunk bytes.
func (s *Service) Speak(ctx context.Context, app *apps.App, text string, chunk func([]byte) error) error {
	body, _, err := s.Synthesize(ctx, app, text, "")
	if err != nil {
		return err
	}
	defer body.Close()
	buf := make([]byte, speakChunk)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if cerr := chunk(buf[:n]); cerr != nil {
				return cerr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
