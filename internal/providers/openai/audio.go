package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/parleyhq/parley/internal/providers"
)

var (
	_ providers.Transcriber = (*Client)(nil)
	_ providers.Synthesizer = (*Client)(nil)
)

// Transcribe implements providers.Transcriber: one multipart POST <BaseURL>/audio/transcriptions
// (model, file, response_format json), as OpenAI's speech-to-text API takes it.
func (c *Client) Transcribe(ctx context.Context, model, filename, contentType string, audio []byte) (string, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("model", model)
	_ = w.WriteField("response_format", "json")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": filename}))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(audio)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return "", providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.send(ctx, c.sttURL, body.Bytes(), w.FormDataContentType(), "application/json")
	if err != nil {
		return "", err
	}
	var resp struct {
		Text string `json:"text"`
	}
	if derr := json.NewDecoder(x).Decode(&resp); derr != nil {
		e := c.decodeError(x, derr)
		x.finish(false)
		return "", e
	}
	x.finish(true)
	return resp.Text, nil
}

// Synthesize implements providers.Synthesizer: one POST <BaseURL>/audio/speech (model, input,
// voice, mp3), whose body streams back as the upstream sends it.
func (c *Client) Synthesize(ctx context.Context, model, text, voice string) (io.ReadCloser, string, error) {
	body, err := json.Marshal(map[string]string{"model": model, "input": text, "voice": voice, "response_format": "mp3"})
	if err != nil {
		return nil, "", providers.NewError(c.name, providers.KindInvocation, 0, "invalid request", err)
	}
	x, err := c.send(ctx, c.ttsURL, body, "application/json", "audio/*")
	if err != nil {
		return nil, "", err
	}
	return &audioStream{c: c, x: x}, audioType(x.header.Get("Content-Type")), nil
}

// audioStream is a speech response body: reads are watched by the idle timeout, and a failure
// mid-way is a provider error.
type audioStream struct {
	c *Client
	x *exchange
}

func (a *audioStream) Read(p []byte) (int, error) {
	n, err := a.x.Read(p)
	if err != nil && err != io.EOF {
		return n, a.c.transportError(a.x.ctx, err, true)
	}
	return n, err
}

func (a *audioStream) Close() error {
	a.x.finish(false)
	return nil
}

// audioType is the content type of speech the upstream sent, audio/mpeg when it said nothing
// usable.
func audioType(header string) string {
	if mt, _, err := mime.ParseMediaType(header); err == nil && strings.HasPrefix(mt, "audio/") {
		return header
	}
	return "audio/mpeg"
}
