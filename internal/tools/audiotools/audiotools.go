// Package audiotools holds Dify's built-in audio tools (provider "audio", plugin-era id
// "langgenius/audio/audio"): tts reads a text aloud and answers the audio as a file; asr writes
// down the speech of an audio file. Both call the server's configured models (types tts and
// speech2text) through the audio service, as Dify's tools call the workspace's; their model
// parameter names one as Dify writes it, "provider#model", and the voice of tts is the
// parameter "voice#provider#model". A model that is not configured here (an imported app names
// its workspace's) is the server's default model of that type.
package audiotools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/parleyhq/parley/internal/tools"
)

// Audio is what the tools need of the audio service (*audio.Service).
type Audio interface {
	SynthesizeWith(ctx context.Context, ref, text, voice string) (io.ReadCloser, string, error)
	TranscribeWith(ctx context.Context, ref, filename, contentType string, data []byte) (string, error)
}

// MaxAudioBytes bounds the audio tts answers: past it the tool fails rather than hold more.
const MaxAudioBytes = 25 << 20

// Provider ids of the tools, as Dify's DSL spells them.
const (
	providerName = "audio"
	pluginID     = "langgenius/audio/audio"
)

// Set finds the audio tools.
type Set struct{ audio Audio }

// New returns the audio tools, calling models through a; with a nil, they are found (an
// import resolves them) but answer that they run only in the server.
func New(a Audio) *Set { return &Set{audio: a} }

// errNoAudio answers a call of a Set without an audio service.
const errNoAudio = "the audio tools run only in the server"

// Find returns the audio tool ref names, configured with the app's values; tools.ErrUnknownTool
// for another tool.
func (s *Set) Find(_ context.Context, ref tools.Ref) (tools.Tool, error) {
	switch ref.Type {
	case "", tools.TypeBuiltin, tools.TypePlugin:
	default:
		return nil, fmt.Errorf("%w: %s tools are not audio tools", tools.ErrUnknownTool, ref.Type)
	}
	if p := ref.Provider(); p != providerName && p != pluginID {
		return nil, fmt.Errorf("%w: %s/%s", tools.ErrUnknownTool, p, ref.Name)
	}
	switch ref.Name {
	case "tts":
		return &tts{set: s, configured: ref.Configured}, nil
	case "asr":
		return &asr{set: s, configured: ref.Configured}, nil
	}
	return nil, fmt.Errorf("%w: %s/%s", tools.ErrUnknownTool, providerName, ref.Name)
}

func text(a map[string]any, name string) string {
	s, _ := a[name].(string)
	return s
}

// tts reads a text aloud.
type tts struct {
	set        *Set
	configured map[string]any
}

func (t *tts) Identity() tools.Identity {
	return tools.Identity{Provider: providerName, Name: "tts", Label: map[string]string{"en_US": "Text To Speech"}}
}

func (t *tts) Description() string { return "Convert text to speech." }

func (t *tts) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to read aloud."}},"required":["text"]}`)
}

// Invoke reads the text aloud: "Audio generated successfully" and the audio as a file, as
// Dify's tool answers.
func (t *tts) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	a, err := tools.MergeArgs(t.configured, raw)
	if err != nil {
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	if t.set.audio == nil {
		return tools.Result{Text: errNoAudio, IsError: true}, nil
	}
	ref := text(a, "model")
	body, contentType, err := t.set.audio.SynthesizeWith(ctx, ref, text(a, "text"), text(a, "voice#"+ref))
	if err != nil {
		return failed(ctx, "text to speech: %v", err)
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, MaxAudioBytes+1))
	switch {
	case err != nil:
		return failed(ctx, "text to speech: %v", err)
	case len(data) > MaxAudioBytes:
		return failed(ctx, "text to speech: the audio is larger than %d bytes", MaxAudioBytes)
	}
	return tools.Result{Text: "Audio generated successfully",
		Files: []tools.File{{Name: "speech" + extension(contentType), MIMEType: contentType, Data: data}}}, nil
}

// extension is the file extension of an audio content type (".mp3" for audio/mpeg).
func extension(contentType string) string {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	}
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
		return exts[0]
	}
	return ".audio"
}

// failed is a failed answer, or ctx's error when it ended.
func failed(ctx context.Context, format string, v ...any) (tools.Result, error) {
	if ctx.Err() != nil {
		return tools.Result{}, context.Cause(ctx)
	}
	return tools.Result{Text: fmt.Sprintf(format, v...), IsError: true}, nil
}

// asr writes down the speech of an audio file.
type asr struct {
	set        *Set
	configured map[string]any
}

func (t *asr) Identity() tools.Identity {
	return tools.Identity{Provider: providerName, Name: "asr", Label: map[string]string{"en_US": "Speech To Text"}}
}

func (t *asr) Description() string { return "Convert audio file to text." }

// Parameters offer the model nothing: the audio file is given by the app (a file parameter,
// which a model cannot give).
func (t *asr) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}

// FileParameters implements tools.FileTaker: audio_file is the file to transcribe.
func (t *asr) FileParameters() []string { return []string{"audio_file"} }

// Invoke transcribes the audio file; a file that is not audio answers "not a valid audio
// file", as Dify's tool does.
func (t *asr) Invoke(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	var a map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a); err != nil {
			return tools.Result{Text: fmt.Sprintf("%v: the arguments are not a JSON object", tools.ErrBadArguments), IsError: true}, nil
		}
	}
	f, err := tools.DecodeFileArg(a["audio_file"])
	if err != nil {
		if errors.Is(err, tools.ErrNoFile) {
			return tools.Result{Text: "no audio file was given", IsError: true}, nil
		}
		return tools.Result{Text: err.Error(), IsError: true}, nil
	}
	if f.Type != "audio" && !strings.HasPrefix(f.MIMEType, "audio/") {
		return tools.Result{Text: "not a valid audio file"}, nil
	}
	if t.set.audio == nil {
		return tools.Result{Text: errNoAudio, IsError: true}, nil
	}
	ref, _ := t.configured["model"].(string)
	var given string
	if err := json.Unmarshal(a["model"], &given); err == nil && given != "" {
		ref = given
	}
	said, err := t.set.audio.TranscribeWith(ctx, ref, f.Filename, f.MIMEType, f.Data)
	if err != nil {
		return failed(ctx, "speech to text: %v", err)
	}
	return tools.Result{Text: said}, nil
}
