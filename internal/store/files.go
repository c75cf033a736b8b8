package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Transfer methods of a message file (Dify's FileTransferMethod values).
const (
	TransferRemoteURL = "remote_url"
	TransferLocalFile = "local_file"
	TransferToolFile  = "tool_file"
)

// Owners of a message file: the end user's input or the app's output.
const (
	BelongsToUser      = "user"
	BelongsToAssistant = "assistant"
)

// UploadFile is the record of a file's bytes kept in the blob store under
// StorageKey. It is written once and never changed.
type UploadFile struct {
	ID string
	// AppID and EndUserID say whose upload it is; either may be "" for a
	// file with no such owner (a tool's output, say). Dify shows an
	// upload only to the end user who made it; callers compare EndUserID.
	AppID     string
	EndUserID string
	// Name is the client's file name; Extension is without the dot.
	Name       string
	Size       int64
	Extension  string
	MimeType   string
	StorageKey string
	// Hash is the SHA-256 of the bytes, lower-case hex.
	Hash string
	// SourceURL is where the bytes were fetched from, or "".
	SourceURL string
	// CreatedBy is the id of the end user (or account) that created it.
	CreatedBy string
	CreatedAt time.Time
}

// MessageFile attaches a file to a message.
type MessageFile struct {
	ID        string
	MessageID string
	// Type is Dify's file type: image, document, audio, video or custom.
	Type string
	// TransferMethod is one of the Transfer* constants. TransferRemoteURL
	// needs URL; TransferLocalFile and TransferToolFile need
	// UploadFileID (tool outputs are upload_files rows too).
	TransferMethod string
	URL            string
	UploadFileID   string
	// BelongsTo is BelongsToUser or BelongsToAssistant.
	BelongsTo string
	CreatedAt time.Time
	// Upload is the upload row the file refers to (UploadFileID), filled in by
	// [Store.MessageFiles]; nil for a remote file, and ignored when files are added.
	Upload *UploadFile
}

const uploadFileColumns = "id, app_id, end_user_id, name, size, extension, mime_type, storage_key, hash, source_url, created_by, created_at"

func (f UploadFile) validate() error {
	switch {
	case f.Name == "":
		return errors.New("missing name")
	case f.Size < 0:
		return fmt.Errorf("negative size %d", f.Size)
	case f.StorageKey == "":
		return errors.New("missing storage key")
	case f.CreatedBy == "":
		return errors.New("missing created_by")
	}
	if b, err := hex.DecodeString(f.Hash); err != nil || len(b) != 32 || hex.EncodeToString(b) != f.Hash {
		return fmt.Errorf("hash %q is not lower-case hex SHA-256", f.Hash)
	}
	return nil
}

// CreateUploadFile stores a file record and returns it as stored. ID
// defaults to [NewID] and CreatedAt to now. An unknown app or end user, or
// an end user of another app, gives an error wrapping [ErrNotFound]; a
// reused id or storage key one wrapping [ErrConflict].
func (s *Store) CreateUploadFile(ctx context.Context, f UploadFile) (UploadFile, error) {
	if err := f.validate(); err != nil {
		return UploadFile{}, fmt.Errorf("store: create upload file: %w", err)
	}
	if f.ID == "" {
		f.ID = NewID()
	}
	f.CreatedAt = fromUnix(nowOr(f.CreatedAt).Unix())
	err := s.WithTx(ctx, func(tx *sql.Tx) error {
		if f.EndUserID != "" {
			var appID string
			err := s.inTx(tx).QueryRowContext(ctx, s.Rebind("SELECT app_id FROM end_users WHERE id = ?"), f.EndUserID).Scan(&appID)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && f.AppID != "" && appID != f.AppID) {
				return fmt.Errorf("end user %s: %w", f.EndUserID, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		_, err := s.inTx(tx).ExecContext(ctx, s.Rebind("INSERT INTO upload_files ("+uploadFileColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
			f.ID, nullString(f.AppID), nullString(f.EndUserID), f.Name, f.Size, f.Extension, f.MimeType, f.StorageKey, f.Hash,
			nullString(f.SourceURL), f.CreatedBy, f.CreatedAt.Unix())
		if isForeignKeyViolation(err) {
			return fmt.Errorf("app %s: %w", f.AppID, ErrNotFound)
		}
		return mapError(err)
	})
	if err != nil {
		return UploadFile{}, fmt.Errorf("store: create upload file: %w", err)
	}
	return f, nil
}

// UploadFile returns the file record with the given id, or an error
// wrapping [ErrNotFound]. It does not check ownership.
func (s *Store) UploadFile(ctx context.Context, id string) (UploadFile, error) {
	var (
		f                           UploadFile
		appID, endUserID, sourceURL sql.NullString
		created                     int64
	)
	err := s.conn().QueryRowContext(ctx, s.Rebind("SELECT "+uploadFileColumns+" FROM upload_files WHERE id = ?"), id).
		Scan(&f.ID, &appID, &endUserID, &f.Name, &f.Size, &f.Extension, &f.MimeType, &f.StorageKey, &f.Hash, &sourceURL, &f.CreatedBy, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return UploadFile{}, fmt.Errorf("store: upload file %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return UploadFile{}, fmt.Errorf("store: upload file %s: %w", id, err)
	}
	f.AppID, f.EndUserID, f.SourceURL = appID.String, endUserID.String, sourceURL.String
	f.CreatedAt = fromUnix(created)
	return f, nil
}

const messageFileColumns = "id, message_id, type, transfer_method, url, upload_file_id, belongs_to, created_at"

func (f MessageFile) validate() error {
	switch {
	case f.MessageID == "":
		return errors.New("missing message id")
	case f.Type == "":
		return errors.New("missing type")
	case f.BelongsTo != BelongsToUser && f.BelongsTo != BelongsToAssistant:
		return fmt.Errorf("unknown belongs_to %q", f.BelongsTo)
	}
	switch f.TransferMethod {
	case TransferRemoteURL:
		if f.URL == "" {
			return errors.New("remote_url file without url")
		}
	case TransferLocalFile, TransferToolFile:
		if f.UploadFileID == "" {
			return fmt.Errorf("%s file without upload file id", f.TransferMethod)
		}
	default:
		return fmt.Errorf("unknown transfer method %q", f.TransferMethod)
	}
	return nil
}

// AddMessageFiles stores the files, all or none, and returns them as
// stored. ID defaults to [NewID], BelongsTo to BelongsToUser and CreatedAt
// to now. An unknown message or upload file gives an error wrapping
// [ErrNotFound].
func (s *Store) AddMessageFiles(ctx context.Context, files []MessageFile) ([]MessageFile, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out, err := prepareMessageFiles(files, "")
	if err != nil {
		return nil, fmt.Errorf("store: add message files: %w", err)
	}
	if err := s.WithTx(ctx, func(tx *sql.Tx) error { return s.insertMessageFiles(ctx, s.inTx(tx), out) }); err != nil {
		return nil, fmt.Errorf("store: add message files: %w", err)
	}
	return out, nil
}

// prepareMessageFiles fills in the defaults of files (and their message id, when messageID is
// set) and checks them, returning the copies to store.
func prepareMessageFiles(files []MessageFile, messageID string) ([]MessageFile, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out := make([]MessageFile, len(files))
	now := time.Now()
	for i, f := range files {
		if messageID != "" {
			f.MessageID = messageID
		}
		if f.ID == "" {
			f.ID = NewID()
		}
		if f.BelongsTo == "" {
			f.BelongsTo = BelongsToUser
		}
		if err := f.validate(); err != nil {
			return nil, fmt.Errorf("file %d: %w", i, err)
		}
		if f.CreatedAt.IsZero() {
			f.CreatedAt = now
		}
		f.CreatedAt = fromUnix(f.CreatedAt.Unix())
		out[i] = f
	}
	return out, nil
}

// insertMessageFiles writes prepared files through q, which must be a transaction.
func (s *Store) insertMessageFiles(ctx context.Context, q execer, files []MessageFile) error {
	if len(files) == 0 {
		return nil
	}
	insert := s.Rebind("INSERT INTO message_files (" + messageFileColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
	for _, f := range files {
		_, err := q.ExecContext(ctx, insert,
			f.ID, f.MessageID, f.Type, f.TransferMethod, nullString(f.URL), nullString(f.UploadFileID), f.BelongsTo, f.CreatedAt.Unix())
		if isForeignKeyViolation(err) {
			return fmt.Errorf("message %s or upload file %s: %w", f.MessageID, f.UploadFileID, ErrNotFound)
		}
		if err != nil {
			return mapError(err)
		}
	}
	return nil
}

// MessageFiles returns the files of the given messages keyed by message
// id, each list in the order the files were added (created_at, then id).
// Messages without files are absent from the map.
func (s *Store) MessageFiles(ctx context.Context, messageIDs []string) (map[string][]MessageFile, error) {
	out := make(map[string][]MessageFile)
	for _, chunk := range chunks(messageIDs) {
		// The upload each file refers to comes along: history shows its name, type and size.
		rows, err := s.conn().QueryContext(ctx, s.Rebind("SELECT "+prefixColumns("mf.", messageFileColumns)+
			", "+prefixColumns("uf.", uploadFileColumns)+
			" FROM message_files mf LEFT JOIN upload_files uf ON uf.id = mf.upload_file_id"+
			" WHERE mf.message_id IN ("+placeholders(len(chunk))+") ORDER BY mf.created_at, mf.id"), anys(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("store: message files: %w", err)
		}
		err = func() error {
			defer rows.Close()
			for rows.Next() {
				var (
					f           MessageFile
					url, upload sql.NullString
					created     int64
					u           nullableUpload
				)
				dest := []any{&f.ID, &f.MessageID, &f.Type, &f.TransferMethod, &url, &upload, &f.BelongsTo, &created}
				if err := rows.Scan(append(dest, u.dest()...)...); err != nil {
					return err
				}
				f.URL, f.UploadFileID = url.String, upload.String
				f.CreatedAt = fromUnix(created)
				f.Upload = u.file()
				out[f.MessageID] = append(out[f.MessageID], f)
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("store: message files: %w", err)
		}
	}
	return out, nil
}

// prefixColumns qualifies each column of a comma-separated list with prefix ("uf.").
func prefixColumns(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// nullableUpload scans the upload_files columns of an outer join, which are all NULL when the
// row has no upload.
type nullableUpload struct {
	id, appID, endUserID, name, ext, mime, key, hash, sourceURL, createdBy sql.NullString
	size, created                                                          sql.NullInt64
}

func (u *nullableUpload) dest() []any {
	return []any{&u.id, &u.appID, &u.endUserID, &u.name, &u.size, &u.ext, &u.mime, &u.key, &u.hash, &u.sourceURL, &u.createdBy, &u.created}
}

func (u *nullableUpload) file() *UploadFile {
	if !u.id.Valid {
		return nil
	}
	return &UploadFile{ID: u.id.String, AppID: u.appID.String, EndUserID: u.endUserID.String, Name: u.name.String,
		Size: u.size.Int64, Extension: u.ext.String, MimeType: u.mime.String, StorageKey: u.key.String, Hash: u.hash.String,
		SourceURL: u.sourceURL.String, CreatedBy: u.createdBy.String, CreatedAt: fromUnix(u.created.Int64)}
}
