package files

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/config"
)

func TestCategory(t *testing.T) {
	t.Parallel()
	for ext, want := range map[string]string{
		"jpg": CategoryImage, "jpeg": CategoryImage, "png": CategoryImage, "webp": CategoryImage, "gif": CategoryImage, "svg": CategoryImage,
		"PNG": CategoryImage, ".png": CategoryImage, ".JPG": CategoryImage,
		"mp3": CategoryAudio, "m4a": CategoryAudio, "wav": CategoryAudio, "amr": CategoryAudio, "mpga": CategoryAudio,
		"mp4": CategoryVideo, "mov": CategoryVideo, "mpeg": CategoryVideo, "webm": CategoryVideo, ".MOV": CategoryVideo,
		"pdf": CategoryDocument, "txt": CategoryDocument, "exe": CategoryDocument, "": CategoryDocument,
		// Not in Dify's lists, so documents for size purposes.
		"bmp": CategoryDocument, "ogg": CategoryDocument, "avi": CategoryDocument, "..png": CategoryDocument,
	} {
		if got := Category(ext); got != want {
			t.Errorf("Category(%q) = %q, want %q", ext, got, want)
		}
	}
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	set := config.UploadLimits{FileSizeLimitMB: 1, ImageFileSizeLimitMB: 2, AudioFileSizeLimitMB: 3, VideoFileSizeLimitMB: 4}
	for _, tc := range []struct {
		limits   config.UploadLimits
		category string
		want     int64
	}{
		{set, CategoryDocument, 1 * mb},
		{set, CategoryImage, 2 * mb},
		{set, CategoryAudio, 3 * mb},
		{set, CategoryVideo, 4 * mb},
		{set, "custom", 1 * mb},
		// Unset limits fall back to Dify's defaults (docs/dify-compat.md).
		{config.UploadLimits{}, CategoryDocument, 15 * mb},
		{config.UploadLimits{}, CategoryImage, 10 * mb},
		{config.UploadLimits{}, CategoryAudio, 50 * mb},
		{config.UploadLimits{ImageFileSizeLimitMB: -1}, CategoryVideo, 100 * mb},
	} {
		if got := SizeLimit(tc.limits, tc.category); got != tc.want {
			t.Errorf("SizeLimit(%+v, %q) = %d, want %d", tc.limits, tc.category, got, tc.want)
		}
	}
}

func TestDataURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		contentType string
		data        string
		want        string
	}{
		{"image/png", "\x01\x02\x03", "data:image/png;base64,AQID"},
		{"image/jpeg", "", "data:image/jpeg;base64,"},
		{"", "hi", "data:application/octet-stream;base64,aGk="},
	} {
		if got := DataURL(tc.contentType, []byte(tc.data)); got != tc.want {
			t.Errorf("DataURL(%q, %q) = %q, want %q", tc.contentType, tc.data, got, tc.want)
		}
	}
}

func TestRawExtension(t *testing.T) {
	t.Parallel()
	// Python: os.path.splitext(name)[1].lstrip(".")
	for name, want := range map[string]string{
		"a.png":      "png",
		"A.PNG":      "PNG",
		"a.tar.gz":   "gz",
		"a..gz":      "gz",
		"noext":      "",
		"a.":         "",
		".bashrc":    "",
		"..bashrc":   "",
		"...":        "",
		".a.txt":     "txt",
		"résumé.Pdf": "Pdf",
	} {
		if got := rawExtension(name); got != want {
			t.Errorf("rawExtension(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestTrimName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300)
	for _, tc := range []struct {
		name, want string
	}{
		{"a.png", "a.png"},
		{strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{strings.Repeat("a", 256), strings.Repeat("a", 255)},
		{long + ".Txt", strings.Repeat("é", 251) + ".Txt"},
		{long, strings.Repeat("é", 255)},
		// An extension too long to keep is cut like the rest.
		{"a." + long, "a." + strings.Repeat("é", 253)},
	} {
		got := trimName(tc.name, rawExtension(tc.name))
		if got != tc.want {
			t.Errorf("trimName(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if n := utf8.RuneCountInString(got); n > MaxNameLen || !utf8.ValidString(got) {
			t.Errorf("trimName(%q): %d runes, valid UTF-8 %v", tc.name, n, utf8.ValidString(got))
		}
	}
}
