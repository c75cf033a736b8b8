package filetools

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/tools"
)

// The tools of bowenliang123/base64_codec, read at its version 1.0.1. Its text and hex tools
// have a form setting urlsafe_enabled ("true" for the URL-safe alphabet); its decoders of files
// take several Base64 texts at once, split by splitter_str, and return one file each.
const (
	base64Plugin   = "bowenliang123/base64_codec/base64_codec"
	base64Provider = "base64_codec"
)

// defaultSplitter separates the Base64 texts of the file decoders unless splitter_str says
// otherwise.
const defaultSplitter = "\n\n"

var (
	encodedTextParam = param{name: "encoded_text", required: true}
	filenameParam    = param{name: "output_filename", description: "Optional output filename(s), one per line."}
	splitterParam    = param{name: "splitter_str", required: true, description: `Delimiter between Base64 texts, each decoded to a file of its own (default "\n\n").`}
)

var base64Specs = []spec{
	b64spec("base64_encoder", "Text ⮕ Base64", "A tool to encode text to Base64-encoded string", encodeText,
		param{name: "plain_text", description: "Text to encode", required: true}),
	b64spec("base64_file_encoder", "File ⮕ Base64", "Encode the binary file to Base64-encoded text", encodeFile).withFiles("input_file"),
	b64spec("base64_image_encoder", "Image Files ⮕ Base64", "Encode the image file to Base64-encoded text", encodeImage).withFiles("input_image"),
	b64spec("hex_to_base64", "Hex ⮕ Base64", "Convert Hexadecimal text to Base64 text", hexToBase64,
		param{name: "hex_text", description: "Hex Text", required: true}),
	b64spec("base64_decoder", "Base64 ⮕ Text", "A tool to decode Base64-encoded text", decodeText,
		encodedTextParam.described("A tool for decoding Base64-encoded text to plain text")),
	b64spec("base64_file_decoder", "Base64 ⮕ File(s)", "Decode Base64-encoded text to a binary file", decodeFiles,
		encodedTextParam.described("Base64 encoded text of the file(s)"), filenameParam, splitterParam),
	b64spec("base64_image_decoder", "Base64 ⮕ Image File(s)", "Decode Base64-encoded text to an image file", decodeImages,
		encodedTextParam.described(`Base64 encoded image(s), PNG unless a "data:image/…;base64," prefix says otherwise`), filenameParam, splitterParam),
	b64spec("base64_to_hex", "Base64 ⮕ Hex", "Convert Base64 text to Hexadecimal text", base64ToHex,
		encodedTextParam.described("A tool for decoding Base64-encoded text to plain text")),
}

// b64spec is a tool of base64_codec.
func b64spec(name, label, description string, run func(context.Context, *Set, args) tools.Result, params ...param) spec {
	return spec{plugin: base64Plugin, provider: base64Provider, name: name, label: label, description: description, params: params, run: run}
}

// withFiles is sp with file parameters.
func (sp spec) withFiles(names ...string) spec {
	sp.files = names
	return sp
}

// described is p with a description.
func (p param) described(d string) param {
	p.description = d
	return p
}

// urlsafe is the form setting urlsafe_enabled: true only when it says "true".
func urlsafe(a args) bool { return strings.EqualFold(a.text("urlsafe_enabled"), "true") }

// encoding is the standard or the URL-safe alphabet, padded, as Python's base64 module writes.
func encoding(urlSafe bool) *base64.Encoding {
	if urlSafe {
		return base64.URLEncoding
	}
	return base64.StdEncoding
}

// boundedText is a text parameter, or a refusal when it is over the bound.
func (s *Set) boundedText(a args, name string) (string, *tools.Result) {
	text := a.text(name)
	if len(text) > s.o.MaxTextBytes {
		r := failed("%s is %d bytes; this server takes at most %d", name, len(text), s.o.MaxTextBytes)
		return "", &r
	}
	return text, nil
}

// boundedFile is a file parameter's file, or the plugin's refusal when there is none (a
// refusal too when it is over the bound).
func (s *Set) boundedFile(a args, name string) (tools.FileArg, *tools.Result) {
	f, err := a.file(name)
	if err != nil {
		r := failed("Not a valid file for input %s", name)
		return f, &r
	}
	if len(f.Data) > s.o.MaxFileBytes {
		r := failed("the file is %d bytes; this server takes at most %d", len(f.Data), s.o.MaxFileBytes)
		return f, &r
	}
	return f, nil
}

// encodeText is base64_encoder: the UTF-8 bytes of plain_text in Base64.
func encodeText(_ context.Context, s *Set, a args) tools.Result {
	text, refused := s.boundedText(a, "plain_text")
	if refused != nil {
		return *refused
	}
	return tools.Result{Text: encoding(urlsafe(a)).EncodeToString([]byte(text))}
}

// encodeFile is base64_file_encoder: the file's bytes in Base64.
func encodeFile(_ context.Context, s *Set, a args) tools.Result {
	f, refused := s.boundedFile(a, "input_file")
	if refused != nil {
		return *refused
	}
	return tools.Result{Text: base64.StdEncoding.EncodeToString(f.Data)}
}

// encodeImage is base64_image_encoder: the file as a data URI. The plugin writes the file's
// MIME type as it is (Python would spell a missing one "None"); a missing one is guessed from
// the name here, else application/octet-stream.
func encodeImage(_ context.Context, s *Set, a args) tools.Result {
	f, refused := s.boundedFile(a, "input_image")
	if refused != nil {
		return *refused
	}
	mt := f.MIMEType
	if mt == "" {
		mt = typeByName(f.Filename)
	}
	return tools.Result{Text: "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(f.Data)}
}

// hexToBase64 is hex_to_base64: hex digits (after an optional "0x"; whitespace may separate
// bytes) to Base64, refused as the plugin refuses an odd length or a non-hex character.
func hexToBase64(_ context.Context, s *Set, a args) tools.Result {
	text, refused := s.boundedText(a, "hex_text")
	if refused != nil {
		return *refused
	}
	text = strings.TrimPrefix(strings.TrimSpace(text), "0x")
	if utf8.RuneCountInString(text)%2 != 0 {
		return failed("Invalid hex text, exception: the length of hex text must be an even number.")
	}
	b, err := pyFromHex(text)
	if err != nil {
		return failed("Invalid hex text, exception: %v", err)
	}
	return tools.Result{Text: encoding(urlsafe(a)).EncodeToString(b)}
}

// decodeText is base64_decoder: Base64 to text, which must be UTF-8.
func decodeText(_ context.Context, s *Set, a args) tools.Result {
	text, refused := s.boundedText(a, "encoded_text")
	if refused != nil || text == "" {
		return orEmpty(refused)
	}
	b, err := pyB64Decode(text, urlsafe(a), true)
	if err == nil {
		err = checkUTF8(b)
	}
	if err != nil {
		return failed("Failed to decode Base64 text input, Exception: %v", err)
	}
	return tools.Result{Text: string(b)}
}

// base64ToHex is base64_to_hex: Base64 to lower-case hex digits.
func base64ToHex(_ context.Context, s *Set, a args) tools.Result {
	text, refused := s.boundedText(a, "encoded_text")
	if refused != nil || text == "" {
		return orEmpty(refused)
	}
	b, err := pyB64Decode(text, urlsafe(a), true)
	if err != nil {
		return failed("Failed to covert Base64 text to Hex text, Exception: %v", err)
	}
	return tools.Result{Text: hex.EncodeToString(b)}
}

// orEmpty is the refusal, or the empty answer the plugin gives an empty text.
func orEmpty(refused *tools.Result) tools.Result {
	if refused != nil {
		return *refused
	}
	return tools.Result{}
}

// checkUTF8 fails as Python's bytes.decode("utf-8") does, naming the first bad byte.
func checkUTF8(b []byte) error {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d", b[i], i)
		}
		i += n
	}
	return nil
}

// decoded is one file a decoder made.
type decoded struct {
	name, mimeType string
	data           []byte
}

// decodeFiles is base64_file_decoder: each Base64 text to a file, named by the line of
// output_filename of the same rank, its type recognised from its first bytes (the name then
// gets the type's extension), else guessed from the name.
func decodeFiles(ctx context.Context, s *Set, a args) tools.Result {
	return s.decodeAll(ctx, a, "Empty input encoded_text", func(text, name string) (decoded, error) {
		if i := strings.IndexByte(text, ','); i >= 0 {
			text = text[i:] // a data URI's prefix; the comma is skipped as a non-Base64 character
		}
		b, err := pyB64Decode(text, false, false)
		if err != nil {
			return decoded{}, err
		}
		if k, ok := sniff(b); ok {
			if name != "" && !strings.HasSuffix(name, "."+k.ext) {
				name += "." + k.ext
			}
			return decoded{name: name, mimeType: k.mime, data: b}, nil
		}
		return decoded{name: name, mimeType: typeByName(name), data: b}, nil
	})
}

// dataImage is the image type of a data URI's prefix, as the plugin reads it.
var dataImage = regexp.MustCompile(`data:image/([\p{L}\p{N}_\-+]+);base64`)

// decodeImages is base64_image_decoder: each Base64 text to an image, PNG unless its
// "data:image/…;base64," prefix names another type (one the plugin knows an extension of; an
// unknown one leaves the type to be guessed when the file is stored).
func decodeImages(ctx context.Context, s *Set, a args) tools.Result {
	return s.decodeAll(ctx, a, "Invalid input encoded_text", func(text, name string) (decoded, error) {
		mt := "image/png"
		if i := strings.IndexByte(text, ','); i >= 0 {
			mt = ""
			if m := dataImage.FindStringSubmatch(text[:i]); m != nil && knownImageTypes["image/"+m[1]] {
				mt = "image/" + m[1]
			}
			text = text[i:]
		}
		b, err := pyB64Decode(text, false, false)
		return decoded{name: name, mimeType: mt, data: b}, err
	})
}

// knownImageTypes are the image types whose extension Python's mimetypes module knows without
// the system's tables.
var knownImageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/bmp": true,
	"image/svg+xml": true, "image/tiff": true, "image/vnd.microsoft.icon": true, "image/heic": true,
	"image/heif": true, "image/avif": true, "image/ief": true, "image/x-rgb": true,
}

// decodeAll splits encoded_text at the splitter and decodes each piece with one, naming the
// files by the lines of output_filename. Empty pieces are skipped and so are empty results, as
// the plugin skips them; one piece that fails fails the call.
func (s *Set) decodeAll(ctx context.Context, a args, emptyMsg string, one func(text, name string) (decoded, error)) tools.Result {
	text, refused := s.boundedText(a, "encoded_text")
	if refused != nil {
		return *refused
	}
	if text == "" {
		return failed("%s", emptyMsg)
	}
	pieces := nonEmpty(strings.Split(text, splitter(a)))
	if len(pieces) > s.o.MaxFiles {
		return failed("encoded_text holds %d Base64 texts; this server decodes at most %d files at once", len(pieces), s.o.MaxFiles)
	}
	names := nonEmpty(strings.Split(a.text("output_filename"), "\n"))
	var out tools.Result
	total := 0
	for i, piece := range pieces {
		if ctx.Err() != nil {
			return tools.Result{}
		}
		name := ""
		if i < len(names) {
			name = names[i]
		}
		d, err := one(piece, name)
		if err != nil {
			return failed("Failed to decode base64 text, error: %v", err)
		}
		if total += len(d.data); total > s.o.MaxDecodedBytes {
			return failed("the decoded files are over %d bytes, the most this server returns at once", s.o.MaxDecodedBytes)
		}
		if len(d.data) > 0 {
			out.Files = append(out.Files, tools.File{Name: d.name, MIMEType: d.mimeType, Data: d.data})
		}
	}
	return out
}

// splitter is splitter_str as the plugin reads it: trimmed, "\n\n" when that leaves nothing,
// and a written "\n" standing for a line break.
func splitter(a args) string {
	sp := strings.TrimSpace(a.text("splitter_str"))
	if sp == "" {
		sp = defaultSplitter
	}
	return strings.ReplaceAll(sp, `\n`, "\n")
}

// nonEmpty is ss without its empty strings.
func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// typeByName is the media type of a file name's extension, without parameters;
// application/octet-stream when it names none.
func typeByName(name string) string {
	if ext := path.Ext(name); ext != "" {
		if mt, _, err := mime.ParseMediaType(mime.TypeByExtension(ext)); err == nil {
			return mt
		}
	}
	return "application/octet-stream"
}
