package filetools

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// kind is a file type recognised from a file's first bytes, with the MIME type and extension
// that the Python library filetype (version 1.2, which base64_file_decoder uses) gives it. The
// signatures are filetype's, checked against it on a corpus of samples and their mutations; a
// few of its rarer types (LZ4, LZO, Nintendo ROMs, EOT fonts, WebAssembly, Zstandard's
// skippable frames) are left out.
type kind struct {
	ext, mime string
	match     func(head []byte) bool
}

// sniffLen is how much of a file filetype reads.
const sniffLen = 8192

// sniff recognises b's type from its first bytes, trying the types in filetype's order (images,
// audio, video, fonts, documents, archives). Plain text is not a type: it is left to the file's
// name, as filetype leaves it.
func sniff(b []byte) (kind, bool) {
	head := b[:min(len(b), sniffLen)]
	for _, k := range kinds {
		if k.match(head) {
			return k, true
		}
	}
	return kind{}, false
}

// at reports whether head holds sig at offset off.
func at(head []byte, off int, sig string) bool {
	return len(head) >= off+len(sig) && string(head[off:off+len(sig)]) == sig
}

// prefix matches a signature at the start, at least minLen bytes being there.
func prefix(minLen int, sigs ...string) func([]byte) bool {
	return func(h []byte) bool {
		return len(h) >= minLen && slices.ContainsFunc(sigs, func(s string) bool { return at(h, 0, s) })
	}
}

// riff matches a RIFF container of the form (with at least 12 bytes).
func riff(form string) func([]byte) bool {
	return func(h []byte) bool { return at(h, 0, "RIFF") && at(h, 8, form) }
}

// ftyp is the "ftyp" box of an ISO media file (MP4, QuickTime, HEIF): its major brand and its
// compatible brands. ok is false unless the first 16 bytes and the whole box are there.
func ftyp(h []byte) (major string, compatible []string, ok bool) {
	if len(h) < 16 || !at(h, 4, "ftyp") {
		return "", nil, false
	}
	size := int(binary.BigEndian.Uint32(h))
	if len(h) < size {
		return "", nil, false
	}
	for i := 16; i < size; i += 4 {
		compatible = append(compatible, string(h[i:min(i+4, size)]))
	}
	return string(h[8:12]), compatible, true
}

// heif matches an ISO media file of the major brand, or of the image brands mif1 and msf1
// with brand among the compatible ones.
func heif(brand string) func([]byte) bool {
	return func(h []byte) bool {
		major, compatible, ok := ftyp(h)
		return ok && (major == brand || ((major == "mif1" || major == "msf1") && slices.Contains(compatible, brand)))
	}
}

// isMP4 matches an ISO media file of the brands mp41, mp42 or isom, major or compatible.
func isMP4(h []byte) bool {
	major, compatible, ok := ftyp(h)
	mp4 := func(b string) bool { return b == "mp41" || b == "mp42" || b == "isom" }
	return ok && (mp4(major) || slices.ContainsFunc(compatible, mp4))
}

// ebml matches a Matroska file whose document type element names doc.
func ebml(doc string) func([]byte) bool {
	return func(h []byte) bool {
		element := append([]byte{0x42, 0x82, 0x80 | byte(len(doc))}, doc...) // DocType, its size, its text
		return at(h, 0, "\x1a\x45\xdf\xa3") && bytes.Contains(h, element)
	}
}

// isAPNG matches an animated PNG: its animation control chunk (acTL) comes before its image
// data.
func isAPNG(h []byte) bool {
	if !at(h, 0, "\x89PNG\r\n\x1a\n") {
		return false
	}
	for i := 8; i+8 <= len(h); {
		size := int(binary.BigEndian.Uint32(h[i:]))
		switch string(h[i+4 : i+8]) {
		case "IDAT", "IEND":
			return false
		case "acTL":
			return true
		}
		if size > len(h) {
			return false
		}
		i += 12 + size // length, type, data, CRC
	}
	return false
}

// isTIFF matches TIFF's two byte orders (with at least 10 bytes).
func isTIFF(h []byte) bool {
	return len(h) > 9 && (at(h, 0, "II*\x00") || at(h, 0, "MM\x00*"))
}

// sfntVersion matches a WOFF container of a TrueType, OpenType or Apple font.
func sfntVersion(magic string) func([]byte) bool {
	return func(h []byte) bool {
		return at(h, 0, magic) && (at(h, 4, "\x00\x01\x00\x00") || at(h, 4, "OTTO") || at(h, 4, "true"))
	}
}

// zipMimetype matches a zip archive whose first entry is the "mimetype" file holding mt (EPUB,
// OpenDocument).
func zipMimetype(mt string) func([]byte) bool {
	return func(h []byte) bool { return at(h, 0, "PK\x03\x04") && at(h, 30, "mimetype"+mt) }
}

// zipEntry is where the next zip entry header is, from off on, within 6000 bytes; -1 if none.
func zipEntry(h []byte, off int) int {
	end := min(off+6000, len(h))
	if off >= end {
		return -1
	}
	if i := bytes.Index(h[off:end], []byte("PK\x03\x04")); i >= 0 {
		return off + i
	}
	return -1
}

// officeOpenXML matches an Office document whose entries under dir (word/, xl/, ppt/) come
// first, or right after its package entries ([Content_Types].xml, _rels/.rels, docProps): the
// entry names after the package's are read for the next four entries.
func officeOpenXML(dir string) func([]byte) bool {
	return func(h []byte) bool {
		if zipEntry(h, 0) != 0 {
			return false
		}
		for _, d := range []string{"word/", "xl/", "ppt/"} {
			if at(h, 30, d) {
				return d == dir
			}
		}
		if !at(h, 30, "[Content_Types].xml") && !at(h, 30, "_rels/.rels") && !at(h, 30, "docProps") {
			return false
		}
		off := 0
		for range 4 {
			if off = zipEntry(h, off+4); off < 0 {
				return false
			}
			for _, d := range []string{"word/", "xl/", "ppt/"} {
				if at(h, off+30, d) {
					return d == dir
				}
			}
		}
		return false
	}
}

// compound matches an OLE compound file (legacy Office) whose first sector starts with one of
// the signatures, at least minLen bytes being there.
func compound(minLen int, sigs ...string) func([]byte) bool {
	return func(h []byte) bool {
		return len(h) >= minLen && at(h, 0, "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1") &&
			slices.ContainsFunc(sigs, func(s string) bool { return at(h, 512, s) })
	}
}

// isZip matches the zip signatures: "PK" then 3, 5 or 7, then 4, 6 or 8.
func isZip(h []byte) bool {
	return len(h) > 3 && at(h, 0, "PK") && (h[2] == 3 || h[2] == 5 || h[2] == 7) && (h[3] == 4 || h[3] == 6 || h[3] == 8)
}

var kinds = []kind{
	// Images.
	{"dwg", "image/vnd.dwg", prefix(4, "AC10")},
	{"xcf", "image/x-xcf", prefix(10, "gimp xcf v")},
	{"jpg", "image/jpeg", prefix(3, "\xff\xd8\xff")},
	{"jpx", "image/jpx", func(h []byte) bool { return len(h) > 50 && at(h, 0, "\x00\x00\x00\x0c") && at(h, 16, "ftypjp2 ") }},
	{"apng", "image/apng", isAPNG},
	{"png", "image/png", prefix(4, "\x89PNG")},
	{"gif", "image/gif", prefix(3, "GIF")},
	{"webp", "image/webp", func(h []byte) bool { return at(h, 0, "RIFF") && at(h, 8, "WEBPVP") }},
	{"tif", "image/tiff", func(h []byte) bool { return isTIFF(h) && !at(h, 8, "CR") }},
	{"cr2", "image/x-canon-cr2", func(h []byte) bool { return isTIFF(h) && at(h, 8, "CR") }},
	{"bmp", "image/bmp", prefix(2, "BM")},
	{"jxr", "image/vnd.ms-photo", prefix(3, "II\xbc")},
	{"psd", "image/vnd.adobe.photoshop", prefix(4, "8BPS")},
	{"ico", "image/x-icon", prefix(4, "\x00\x00\x01\x00")},
	{"heic", "image/heic", heif("heic")},
	{"dcm", "application/dicom", func(h []byte) bool { return at(h, 128, "DICM") }},
	{"avif", "image/avif", heif("avif")},
	// Audio.
	{"aac", "audio/aac", prefix(2, "\xff\xf1", "\xff\xf9")},
	{"midi", "audio/midi", prefix(4, "MThd")},
	{"mp3", "audio/mpeg", prefix(3, "ID3", "\xff\xf2", "\xff\xf3", "\xff\xfb")},
	{"m4a", "audio/mp4", func(h []byte) bool { return len(h) > 10 && (at(h, 4, "ftypM4A") || at(h, 0, "M4A ")) }},
	{"ogg", "audio/ogg", prefix(4, "OggS")},
	{"flac", "audio/x-flac", prefix(4, "fLaC")},
	{"wav", "audio/x-wav", riff("WAVE")},
	{"amr", "audio/amr", prefix(12, "#!AMR\n")},
	{"aiff", "audio/x-aiff", func(h []byte) bool { return at(h, 0, "FORM") && at(h, 8, "AIFF") }},
	// Video.
	{"3gp", "video/3gpp", prefix(7, "ftyp3gp")},
	{"mp4", "video/mp4", isMP4},
	{"m4v", "video/x-m4v", prefix(11, "\x00\x00\x00\x1cftypM4V")},
	{"mkv", "video/x-matroska", ebml("matroska")},
	{"mov", "video/quicktime", func(h []byte) bool { major, _, ok := ftyp(h); return ok && major == "qt  " }},
	{"avi", "video/x-msvideo", riff("AVI ")},
	{"wmv", "video/x-ms-wmv", prefix(10, "\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9")},
	{"mpg", "video/mpeg", func(h []byte) bool { return at(h, 0, "\x00\x00\x01") && len(h) > 3 && h[3]&0xf0 == 0xb0 }},
	{"webm", "video/webm", ebml("webm")},
	{"flv", "video/x-flv", prefix(4, "FLV\x01")},
	// Fonts.
	{"woff", "application/font-woff", sfntVersion("wOFF")},
	{"woff2", "application/font-woff", sfntVersion("wOF2")},
	{"ttf", "application/font-sfnt", prefix(5, "\x00\x01\x00\x00\x00")},
	{"otf", "application/font-sfnt", prefix(5, "OTTO\x00")},
	// Documents.
	{"doc", "application/msword", compound(516, "\xec\xa5\xc1\x00")},
	{"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", officeOpenXML("word/")},
	{"odt", "application/vnd.oasis.opendocument.text", zipMimetype("application/vnd.oasis.opendocument.text")},
	{"xls", "application/vnd.ms-excel", func(h []byte) bool {
		return compound(521, "\x09\x08\x10\x00\x00\x06\x05\x00")(h) ||
			(compound(521, "\xfd\xff\xff\xff")(h) && (h[518] == 0 || h[518] == 2))
	}},
	{"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", officeOpenXML("xl/")},
	{"ods", "application/vnd.oasis.opendocument.spreadsheet", zipMimetype("application/vnd.oasis.opendocument.spreadsheet")},
	{"ppt", "application/vnd.ms-powerpoint", compound(525, "\xa0\x46\x1d\xf0", "\x00\x6e\x1e\xf0", "\x0f\x00\xe8\x03")},
	{"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation", officeOpenXML("ppt/")},
	{"odp", "application/vnd.oasis.opendocument.presentation", zipMimetype("application/vnd.oasis.opendocument.presentation")},
	// Archives and programs.
	{"br", "application/x-brotli", prefix(4, "\xce\xb2\xcf\x81")},
	{"rpm", "application/x-rpm", prefix(4, "\xed\xab\xee\xdb")},
	{"epub", "application/epub+zip", zipMimetype("application/epub+zip")},
	{"zip", "application/zip", isZip},
	{"tar", "application/x-tar", func(h []byte) bool { return at(h, 257, "ustar") }},
	{"rar", "application/x-rar-compressed", prefix(7, "Rar!\x1a\x07\x00", "Rar!\x1a\x07\x01")},
	{"gz", "application/gzip", prefix(3, "\x1f\x8b\x08")},
	{"bz2", "application/x-bzip2", prefix(3, "BZh")},
	{"7z", "application/x-7z-compressed", prefix(6, "7z\xbc\xaf\x27\x1c")},
	{"pdf", "application/pdf", func(h []byte) bool { return at(bytes.TrimPrefix(h, []byte("\xef\xbb\xbf")), 0, "%PDF") }},
	{"exe", "application/x-msdownload", prefix(2, "MZ")},
	{"swf", "application/x-shockwave-flash", prefix(3, "CWS", "FWS")},
	{"rtf", "application/rtf", prefix(5, "{\\rtf")},
	{"crx", "application/x-google-chrome-extension", prefix(4, "Cr24")},
	{"cab", "application/vnd.ms-cab-compressed", prefix(4, "MSCF", "ISc(")},
	{"ps", "application/postscript", prefix(2, "%!")},
	{"xz", "application/x-xz", prefix(6, "\xfd7zXZ\x00")},
	{"sqlite", "application/x-sqlite3", prefix(4, "SQLi")},
	{"deb", "application/x-deb", prefix(21, "!<arch>\ndebian-binary")},
	{"ar", "application/x-unix-archive", prefix(7, "!<arch>")},
	{"Z", "application/x-compress", prefix(2, "\x1f\xa0", "\x1f\x9d")},
	{"lz", "application/x-lzip", prefix(4, "LZIP")},
	{"elf", "application/x-executable", prefix(53, "\x7fELF")},
	{"zst", "application/zstd", func(h []byte) bool { return len(h) > 3 && 0x22 <= h[0] && h[0] <= 0x28 && at(h, 1, "\xb5\x2f\xfd") }},
}
