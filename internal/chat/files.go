package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/parleyhq/parley/internal/files"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/providers"
	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// ErrFileReference is a file reference that cannot be used (wrong transfer method members).
var ErrFileReference = errors.New("invalid file reference")

// Files is where message files come from; *files.Service implements it.
type Files interface {
	Get(ctx context.Context, appID, endUserID, id string) (store.UploadFile, error)
	Open(ctx context.Context, f store.UploadFile) (io.ReadCloser, error)
	FetchRemote(ctx context.Context, rawURL string) (files.Remote, error)
}

// attachment is a file of the user's message, checked and ready to be sent.
type attachment struct {
	ref    run.File
	upload store.UploadFile // for local_file
}

// resolveFiles checks the message's file references before the request is accepted: a remote
// file needs an absolute http(s) URL, an uploaded one must be this end user's.
func (s *Service) resolveFiles(ctx context.Context, appID, endUserID string, refs []run.File) ([]attachment, error) {
	out := make([]attachment, 0, len(refs))
	for i, f := range refs {
		a := attachment{ref: f}
		switch f.TransferMethod {
		case store.TransferRemoteURL:
			u, err := url.Parse(f.URL)
			if f.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("%w: files[%d].url must be an absolute http(s) URL", ErrFileReference, i)
			}
		case store.TransferLocalFile:
			if f.UploadFileID == "" {
				return nil, fmt.Errorf("%w: files[%d].upload_file_id is required for local_file", ErrFileReference, i)
			}
			if s.files == nil {
				return nil, fmt.Errorf("%w: uploads are not available", ErrFileReference)
			}
			up, err := s.files.Get(ctx, appID, endUserID, f.UploadFileID)
			if err != nil {
				return nil, err
			}
			a.upload = up
		default:
			return nil, fmt.Errorf("%w: files[%d].transfer_method %q", ErrFileReference, i, f.TransferMethod)
		}
		out = append(out, a)
	}
	return out, nil
}

// messageFiles are the rows recording the user's files on the message (the store sets their
// message id when it stores them with the message).
func messageFiles(atts []attachment) []store.MessageFile {
	if len(atts) == 0 {
		return nil
	}
	out := make([]store.MessageFile, len(atts))
	for i, a := range atts {
		out[i] = store.MessageFile{
			Type: a.ref.Type, TransferMethod: a.ref.TransferMethod,
			URL: a.ref.URL, UploadFileID: a.upload.ID, BelongsTo: store.BelongsToUser,
		}
	}
	return out
}

// imageParts loads the images a vision model should see, as data URLs (so local models that
// cannot fetch URLs see them too). Other files are recorded on the message but not sent: a
// Chatbot has no document processing. It runs inside the run, after the first byte went out.
func (s *Service) imageParts(ctx context.Context, spec models.ModelSpec, atts []attachment) ([]providers.Part, error) {
	if !spec.HasFeature("vision") {
		return nil, nil
	}
	var parts []providers.Part
	for _, a := range atts {
		if a.ref.Type != "image" {
			continue
		}
		var data []byte
		var ctype string
		switch a.ref.TransferMethod {
		case store.TransferRemoteURL:
			r, err := s.files.FetchRemote(ctx, a.ref.URL)
			if err != nil {
				return nil, err
			}
			data, ctype = r.Data, r.ContentType
		case store.TransferLocalFile:
			rc, err := s.files.Open(ctx, a.upload)
			if err != nil {
				return nil, err
			}
			data, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
			ctype = a.upload.MimeType
		}
		parts = append(parts, providers.Part{Type: providers.PartImageURL, ImageURL: files.DataURL(ctype, data), Detail: providers.DetailHigh})
	}
	return parts, nil
}
