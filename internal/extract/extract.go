// Package extract turns uploaded knowledge-base files into plain text the way
// Dify's default ("dify" ETL) extractors do, so that the cleaning and splitting
// stages see the same input as in Dify.
//
// The accepted extensions and the text shape per format follow Dify's
// extractors (docs/knowledge.md). Extraction is defensive: corrupt,
// truncated or encrypted files produce an *Error instead of a panic, work is
// bounded by the context, by the input size and by caps on decompressed and
// extracted sizes, and every walk of a file's structure is bounded.
package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// Limits applied to every extraction.
const (
	// MaxInputSize is the largest input file accepted, in bytes. Dify's default
	// upload limit is 15 MB and its Cloud plans allow 50 MB (docs/knowledge.md);
	// this leaves headroom without letting a caller stream unbounded data in.
	MaxInputSize = 100 << 20
	// MaxUncompressedSize caps the total decompressed size of the entries a
	// zip-based format (DOCX, XLSX) may read, against zip bombs.
	MaxUncompressedSize = 100 << 20
	// MaxUncompressedEntrySize caps the decompressed size of any one entry
	// of a zip-based format. The largest parts of real files (the body of a
	// long Word document, a big worksheet) stay well below it; excelize
	// holds each part it reads in memory at once.
	MaxUncompressedEntrySize = 64 << 20
	// MaxTextSize caps the extracted text, in bytes. Longer text is cut at a
	// rune boundary and Document.Truncated is set.
	MaxTextSize = 20 << 20
	// DefaultTimeout bounds an extraction whose context has no deadline, so
	// a pathological file cannot occupy a worker forever.
	DefaultTimeout = 5 * time.Minute
)

// Kinds of extraction failure reported in Error.Kind.
const (
	// KindCorrupt means the file could not be parsed: damaged, truncated or
	// not really in the format its extension claims.
	KindCorrupt = "corrupt"
	// KindEncrypted means the file is password protected.
	KindEncrypted = "encrypted"
	// KindUnsupported means the extension (or a variant of the format, such as
	// legacy binary .xls) is not supported.
	KindUnsupported = "unsupported"
	// KindTooLarge means the input, or what it decompresses to, exceeds the
	// package limits.
	KindTooLarge = "too_large"
)

// ErrUnsupportedType is matched (errors.Is) by every *Error of kind
// KindUnsupported.
var ErrUnsupportedType = errors.New("unsupported file type")

// Error is the typed error returned by Extract. Message is safe to show to API
// clients (it is meant for a document's "error" field); the underlying cause,
// if any, is kept private and reachable through Unwrap.
type Error struct {
	// Kind is one of KindCorrupt, KindEncrypted, KindUnsupported, KindTooLarge.
	Kind string
	// Message is a readable, client-safe description.
	Message string

	cause error
}

// Error implements error.
func (e *Error) Error() string {
	return e.Message
}

// SafeMessage implements safeerr.Error.
func (e *Error) SafeMessage() string { return e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error {
	return e.cause
}

// Is reports whether target is ErrUnsupportedType and e is of kind
// KindUnsupported.
func (e *Error) Is(target error) bool {
	return target == ErrUnsupportedType && e.Kind == KindUnsupported
}

func newError(kind string, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), cause: cause}
}

// Page is the text of one page of a paginated document (PDF).
type Page struct {
	// Number is the 1-based page number.
	Number int
	// Text is the page's extracted text.
	Text string
}

// Document is the result of an extraction.
type Document struct {
	// Text is the whole extracted text: valid UTF-8 without NUL bytes. It is
	// Parts joined in order.
	Text string
	// Parts are the units Dify's extractor returns as separate documents (and
	// therefore splits independently): one per PDF page, one per Markdown
	// header section, one per CSV row, one per non-empty spreadsheet row. For
	// the other formats it holds the single whole text. Empty parts are left
	// out.
	Parts []string
	// Pages holds the per-page text for PDF files; nil for other formats.
	Pages []Page
	// Truncated is set when the text was cut at MaxTextSize.
	Truncated bool
}

type extractor func(ctx context.Context, data []byte) (Document, error)

// extractors maps lower-case extensions to extractors: Dify's default ETL
// extension list, plus JSON (docs/knowledge.md). xls is listed by Dify but needs a BIFF reader, which none of the
// pinned dependencies provide; it is answered with KindUnsupported.
var extractors = map[string]extractor{
	"txt":        extractText,
	"vtt":        extractText,
	"properties": extractText,
	"markdown":   extractMarkdown,
	"md":         extractMarkdown,
	"mdx":        extractMarkdown,
	"html":       extractHTML,
	"htm":        extractHTML,
	"pdf":        extractPDF,
	"docx":       extractDOCX,
	"csv":        extractCSV,
	"xlsx":       extractXLSX,
	"json":       extractJSON,
}

// Supported reports whether filename has an extension Extract accepts
// (case-insensitive).
func Supported(filename string) bool {
	_, ok := extractors[extension(filename)]
	return ok
}

func extension(filename string) string {
	return strings.ToLower(strings.TrimPrefix(filepath.Ext(filename), "."))
}

// Extract reads r to EOF and extracts the text of the file, choosing the
// extractor by filename's extension, case-insensitively. size is the declared
// file size (<= 0 if unknown); it only serves to reject files above
// MaxInputSize before reading, and the read itself is capped at MaxInputSize
// whatever size says.
//
// Errors are *Error values (see Kind), except context errors, which are
// returned wrapped when ctx ends first (a context without deadline gets
// DefaultTimeout). A panic in a parser is
// recovered and reported as KindCorrupt.
func Extract(ctx context.Context, filename string, r io.Reader, size int64) (Document, error) {
	ext := extension(filename)
	fn, ok := extractors[ext]
	if !ok {
		if ext == "xls" {
			return Document{}, newError(KindUnsupported, nil, "legacy Excel .xls files are not supported; save the file as .xlsx")
		}
		if ext == "" {
			return Document{}, newError(KindUnsupported, nil, "unsupported file type: file has no extension")
		}
		return Document{}, newError(KindUnsupported, nil, "unsupported file type: .%s", ext)
	}
	if size > MaxInputSize {
		return Document{}, newError(KindTooLarge, nil, "file is too large: %d bytes exceeds the %d byte limit", size, MaxInputSize)
	}
	if err := ctx.Err(); err != nil {
		return Document{}, fmt.Errorf("extract %s: %w", filename, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	data, err := readAll(ctx, r)
	if err != nil {
		return Document{}, err
	}
	doc, err := safeRun(ctx, fn, data)
	if err != nil {
		if ce := ctx.Err(); ce != nil && !isExtractError(err) {
			return Document{}, fmt.Errorf("extract %s: %w", filename, ce)
		}
		return Document{}, err
	}
	return finish(doc), nil
}

func isExtractError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// readAll reads the whole input, bounded by MaxInputSize, checking ctx between
// chunks so a slow reader cannot pin the caller past cancellation of the
// context (the in-flight Read itself cannot be interrupted).
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("extract: read: %w", err)
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if buf.Len() > MaxInputSize {
			return nil, newError(KindTooLarge, nil, "file is too large: exceeds the %d byte limit", MaxInputSize)
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("extract: read: %w", err)
		}
	}
}

// safeRun runs fn on its own goroutine, converting a panic into a KindCorrupt
// error, and returns as soon as ctx ends even if the parser is still busy (it
// is then abandoned; it holds only the input buffer and stops at the package's
// size caps).
func safeRun(ctx context.Context, fn extractor, data []byte) (Document, error) {
	type result struct {
		doc Document
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: newError(KindCorrupt, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "file is corrupt or malformed and could not be parsed")}
			}
		}()
		doc, err := fn(ctx, data)
		ch <- result{doc: doc, err: err}
	}()
	select {
	case res := <-ch:
		return res.doc, res.err
	case <-ctx.Done():
		return Document{}, ctx.Err()
	}
}

// finish sanitises the text, pages and parts, drops empty parts, applies
// MaxTextSize, and makes the whole text the single part of formats that have
// no finer units.
func finish(doc Document) Document {
	for i := range doc.Pages {
		doc.Pages[i].Text = sanitize(doc.Pages[i].Text)
	}
	parts := doc.Parts[:0]
	for _, p := range doc.Parts {
		p = sanitize(p)
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	doc.Parts = parts
	doc.Text = sanitize(doc.Text)
	if len(doc.Text) > MaxTextSize {
		doc.Text = truncateUTF8(doc.Text, MaxTextSize)
		doc.Truncated = true
		// Keep Parts consistent with the cut Text.
		total := 0
		for i, p := range doc.Parts {
			if total+len(p) > MaxTextSize {
				doc.Parts = append(doc.Parts[:i], truncateUTF8(p, MaxTextSize-total))
				break
			}
			total += len(p)
		}
	}
	if doc.Parts == nil && strings.TrimSpace(doc.Text) != "" {
		doc.Parts = []string{doc.Text}
	}
	return doc
}
