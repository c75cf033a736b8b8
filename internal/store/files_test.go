package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"testing"
)

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestUploadFiles(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)

		in := UploadFile{
			AppID: f.app, EndUserID: f.alice.ID, Name: "a.png", Size: 204800, Extension: "png", MimeType: "image/png",
			StorageKey: "upload_files/" + f.app + "/a.png", Hash: sha256Hex("png bytes"), CreatedBy: f.alice.ID, CreatedAt: at(1),
		}
		stored, err := s.CreateUploadFile(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.UploadFile(ctx, stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, stored) || got.ID == "" || got.Name != "a.png" || got.SourceURL != "" {
			t.Fatalf("UploadFile = %+v\nwant %+v", got, stored)
		}

		// A file with no owner, fetched from a URL.
		remote, err := s.CreateUploadFile(ctx, UploadFile{
			Name: "r.txt", Size: 0, MimeType: "text/plain", StorageKey: "tool_files/r.txt",
			Hash: sha256Hex(""), SourceURL: "https://example.com/r.txt", CreatedBy: "tool",
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.UploadFile(ctx, remote.ID); err != nil || got.AppID != "" || got.EndUserID != "" || got.SourceURL != "https://example.com/r.txt" {
			t.Fatalf("ownerless file = %+v, %v", got, err)
		}

		if _, err := s.UploadFile(ctx, NewID()); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown id: err = %v, want ErrNotFound", err)
		}
		valid := func(edit func(*UploadFile)) UploadFile {
			u := UploadFile{AppID: f.app, EndUserID: f.alice.ID, Name: "b.txt", StorageKey: "k/" + NewID(), Hash: sha256Hex("b"), CreatedBy: f.alice.ID}
			edit(&u)
			return u
		}
		for name, tc := range map[string]struct {
			u    UploadFile
			want error
		}{
			"end user of other app": {valid(func(u *UploadFile) { u.EndUserID = f.aliceInOtherApp.ID }), ErrNotFound},
			"unknown end user":      {valid(func(u *UploadFile) { u.EndUserID = NewID() }), ErrNotFound},
			"unknown app":           {valid(func(u *UploadFile) { u.AppID, u.EndUserID = NewID(), "" }), ErrNotFound},
			"reused storage key":    {valid(func(u *UploadFile) { u.StorageKey = in.StorageKey }), ErrConflict},
			"reused id":             {valid(func(u *UploadFile) { u.ID = stored.ID }), ErrConflict},
			"upper-case hash":       {valid(func(u *UploadFile) { u.Hash = "AB" + u.Hash[2:] }), nil},
			"short hash":            {valid(func(u *UploadFile) { u.Hash = "abcd" }), nil},
			"no name":               {valid(func(u *UploadFile) { u.Name = "" }), nil},
			"negative size":         {valid(func(u *UploadFile) { u.Size = -1 }), nil},
			"no storage key":        {valid(func(u *UploadFile) { u.StorageKey = "" }), nil},
			"no creator":            {valid(func(u *UploadFile) { u.CreatedBy = "" }), nil},
		} {
			_, err := s.CreateUploadFile(ctx, tc.u)
			switch {
			case err == nil:
				t.Errorf("%s: want error", name)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("%s: err = %v, want %v", name, err, tc.want)
			case tc.want == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict)):
				t.Errorf("%s: err = %v, want a validation error", name, err)
			}
		}
	})
}

func TestMessageFiles(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, s *Store) {
		ctx := t.Context()
		f := newChatFixture(t, s)
		msgs := newMessages(t, s, f.app, f.alice, 3)
		upload, err := s.CreateUploadFile(ctx, UploadFile{
			AppID: f.app, EndUserID: f.alice.ID, Name: "a.png", Size: 3, Extension: "png", MimeType: "image/png",
			StorageKey: "a.png", Hash: sha256Hex("abc"), CreatedBy: f.alice.ID,
		})
		if err != nil {
			t.Fatal(err)
		}

		added, err := s.AddMessageFiles(ctx, []MessageFile{
			{MessageID: msgs[0].ID, Type: "image", TransferMethod: TransferRemoteURL, URL: "https://example.com/cat.png", CreatedAt: at(1)},
			{MessageID: msgs[0].ID, Type: "image", TransferMethod: TransferLocalFile, UploadFileID: upload.ID, CreatedAt: at(1)},
			{MessageID: msgs[1].ID, Type: "document", TransferMethod: TransferToolFile, UploadFileID: upload.ID, BelongsTo: BelongsToAssistant},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(added) != 3 || added[0].ID == "" || added[0].BelongsTo != BelongsToUser || added[2].BelongsTo != BelongsToAssistant || added[2].CreatedAt.IsZero() {
			t.Fatalf("AddMessageFiles = %+v", added)
		}

		got, err := s.MessageFiles(ctx, []string{msgs[0].ID, msgs[1].ID, msgs[2].ID})
		if err != nil {
			t.Fatal(err)
		}
		// Each file read back carries the upload it refers to; a remote file has none.
		want := map[string][]MessageFile{msgs[0].ID: slices.Clone(added[:2]), msgs[1].ID: slices.Clone(added[2:])}
		want[msgs[0].ID][1].Upload, want[msgs[1].ID][0].Upload = &upload, &upload
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("MessageFiles = %+v\nwant %+v", got, want)
		}
		if got, err := s.MessageFiles(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("MessageFiles(nil) = %v, %v", got, err)
		}
		if got, err := s.AddMessageFiles(ctx, nil); err != nil || got != nil {
			t.Errorf("AddMessageFiles(nil) = %v, %v", got, err)
		}

		// All or none: one bad reference rolls the batch back.
		_, err = s.AddMessageFiles(ctx, []MessageFile{
			{MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferRemoteURL, URL: "https://example.com/x.png"},
			{MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferLocalFile, UploadFileID: NewID()},
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown upload file: err = %v, want ErrNotFound", err)
		}
		if got, _ := s.MessageFiles(ctx, []string{msgs[2].ID}); len(got) != 0 {
			t.Errorf("half a failed batch was stored: %+v", got)
		}
		if _, err := s.AddMessageFiles(ctx, []MessageFile{{MessageID: NewID(), Type: "image", TransferMethod: TransferRemoteURL, URL: "u"}}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown message: err = %v, want ErrNotFound", err)
		}
		for name, bad := range map[string]MessageFile{
			"no message":         {Type: "image", TransferMethod: TransferRemoteURL, URL: "u"},
			"no type":            {MessageID: msgs[2].ID, TransferMethod: TransferRemoteURL, URL: "u"},
			"remote without url": {MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferRemoteURL},
			"local without file": {MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferLocalFile},
			"tool without file":  {MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferToolFile},
			"bad method":         {MessageID: msgs[2].ID, Type: "image", TransferMethod: "ftp", URL: "u"},
			"bad owner":          {MessageID: msgs[2].ID, Type: "image", TransferMethod: TransferRemoteURL, URL: "u", BelongsTo: "system"},
		} {
			if _, err := s.AddMessageFiles(ctx, []MessageFile{bad}); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: err = %v, want a validation error", name, err)
			}
		}
	})
}
