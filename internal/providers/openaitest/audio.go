package openaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Default audio models, known unless WithModels says otherwise.
const (
	DefaultTranscriptionModel = "whisper-1"
	DefaultSpeechModel        = "tts-1"
)

// SpeechHeader starts every audio body the fake synthesizes (an MP3 ID3 tag), followed by the
// input text, so that a test can tell which text an audio stream speaks.
const SpeechHeader = "ID3"

// transcribe answers POST …/audio/transcriptions (multipart: model, file): the transcript is the
// file's bytes when they are text, else "<n> bytes of audio".
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if !postOnly(w, r) {
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
	err := r.ParseMultipartForm(64 << 20)
	var data []byte
	if err == nil {
		req.Model = r.FormValue("model")
		f, _, ferr := r.FormFile("file")
		if ferr != nil {
			err = ferr
		} else {
			data, err = io.ReadAll(f)
			f.Close()
		}
	}
	invalid := ""
	if err != nil {
		invalid = "Could not parse multipart form: " + err.Error()
	}
	if !s.admit(w, r, req, invalid) {
		return
	}
	text := string(data)
	if !utf8.Valid(data) || strings.ContainsRune(text, 0) {
		text = strconv.Itoa(len(data)) + " bytes of audio"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
}

// speech answers POST …/audio/speech ({model, input, voice}): SpeechHeader, the voice and the
// input, streamed in a few flushed pieces as audio/mpeg.
func (s *Server) speech(w http.ResponseWriter, r *http.Request, req *Request) {
	var body struct {
		Input string `json:"input"`
		Voice string `json:"voice"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil || body.Input == "" || body.Voice == "" {
		writeError(w, http.StatusBadRequest, "input and voice are required", "invalid_request_error", "")
		return
	}
	audio := SpeechHeader + body.Voice + ":" + body.Input
	w.Header().Set("Content-Type", "audio/mpeg")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for len(audio) > 0 {
		n := min(len(audio), 8)
		_, _ = io.WriteString(w, audio[:n])
		_ = rc.Flush()
		audio = audio[n:]
	}
}
