package extract

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// cfbMagic starts an OLE compound file: legacy .doc/.xls, or an OOXML file
// wrapped by Office's password encryption.
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// utf16Name encodes s as UTF-16LE, the way compound-file directory entries
// store stream names.
func utf16Name(s string) []byte {
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, s[i], 0)
	}
	return out
}

// openOOXML opens a zip-based Office file, classifying failures: an encrypted
// package (a compound file holding an "EncryptedPackage" stream), a legacy
// binary file renamed, a damaged zip, or declared sizes beyond
// MaxUncompressedSize.
func openOOXML(data []byte, format string) (*zip.Reader, error) {
	if bytes.HasPrefix(data, cfbMagic) {
		if bytes.Contains(data, utf16Name("EncryptedPackage")) {
			return nil, newError(KindEncrypted, nil, "%s file is password protected", format)
		}
		return nil, newError(KindUnsupported, nil, "file is a legacy binary Office document, not %s", format)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, newError(KindCorrupt, err, "%s file is corrupt or truncated", format)
	}
	var total uint64
	for _, f := range zr.File {
		if f.UncompressedSize64 > MaxUncompressedEntrySize {
			return nil, newError(KindTooLarge, nil, "%s file is too large: its part %s expands to more than %d MB", format, path.Base(f.Name), MaxUncompressedEntrySize>>20)
		}
		total += f.UncompressedSize64
		if total > MaxUncompressedSize {
			return nil, newError(KindTooLarge, nil, "%s file expands to more than %d bytes", format, MaxUncompressedSize)
		}
	}
	return zr, nil
}

// zipBudget tracks how many decompressed bytes may still be read from a zip;
// declared sizes can lie, so reads are capped on the actual stream too.
type zipBudget struct {
	left   int64
	format string
}

func (b *zipBudget) errTooLarge() error {
	return newError(KindTooLarge, nil, "%s file expands to more than %d bytes", b.format, MaxUncompressedSize)
}

// open returns a reader over the named entry that fails once the budget is
// spent; nil, nil when the entry does not exist.
func (b *zipBudget) open(zr *zip.Reader, name string) (io.ReadCloser, error) {
	for _, f := range zr.File {
		if strings.EqualFold(f.Name, name) {
			rc, err := f.Open()
			if err != nil {
				return nil, newError(KindCorrupt, err, "%s file is corrupt: cannot open %s", b.format, name)
			}
			return &budgetReader{rc: rc, b: b, left: MaxUncompressedEntrySize}, nil
		}
	}
	return nil, nil
}

// budgetReader reads one entry within both the zip's budget and the
// per-entry cap. archive/zip already fails an entry that inflates past its
// declared size, and declared sizes are checked by openOOXML; this holds
// whatever the declarations say.
type budgetReader struct {
	rc   io.ReadCloser
	b    *zipBudget
	left int64 // for this entry
}

var errBudget = errors.New("decompression budget exhausted")

func (r *budgetReader) Read(p []byte) (int, error) {
	left := min(r.b.left, r.left)
	if left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.rc.Read(p)
	r.b.left -= int64(n)
	r.left -= int64(n)
	return n, err
}

func (r *budgetReader) Close() error { return r.rc.Close() }

// classifyRead maps an error met while reading or decoding a zip entry.
func (b *zipBudget) classifyRead(err error, what string) error {
	if errors.Is(err, errBudget) {
		return b.errTooLarge()
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return newError(KindCorrupt, err, "%s file is corrupt or truncated (%s)", b.format, what)
}

func readEntry(b *zipBudget, zr *zip.Reader, name string) ([]byte, error) {
	rc, err := b.open(zr, name)
	if err != nil || rc == nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, b.classifyRead(err, fmt.Sprintf("reading %s", name))
	}
	return data, nil
}
