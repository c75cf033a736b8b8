package mdexport

import (
	"archive/zip"
	"fmt"
	"html"
	"strings"
)

// maxPartBytes bounds one XML part of a DOCX or PPTX package before it is compressed: the
// package is checked against MaxOutputBytes once compressed, and XML compresses about ten to
// one, so this keeps the memory of a conversion near what its file may take.
const maxPartBytes = 10 * MaxOutputBytes

// errPartTooLarge: a part of a DOCX or PPTX package passed maxPartBytes.
var errPartTooLarge = fmt.Errorf("the document would be larger than %d bytes, the most one call makes", MaxOutputBytes)

// part is one part of an OOXML package: its name in the ZIP file and its content.
type part struct {
	name, content string
}

// packParts writes the parts as an OOXML package (a ZIP file, [Content_Types].xml first, as
// readers that stream the file expect), within MaxOutputBytes.
func packParts(parts []part) ([]byte, error) {
	buf := newLimitedBuffer()
	zw := zip.NewWriter(buf)
	for _, p := range parts {
		w, err := zw.Create(p.name)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(p.content)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// xmlHeader starts every XML part.
const xmlHeader = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"

// esc is s escaped for XML text and attribute values (the text was cleaned of the characters
// XML cannot carry when it was prepared).
func esc(s string) string { return html.EscapeString(s) }

// relationship is one relationship of a part.
type relationship struct {
	id, typ, target string
	external        bool
}

// Relationship types.
const (
	relOfficeDocument = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
	relCoreProps      = "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties"
	relStyles         = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles"
	relNumbering      = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering"
	relHyperlink      = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"
	relSlide          = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"
	relSlideLayout    = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout"
	relSlideMaster    = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideMaster"
	relTheme          = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/theme"
	relPresProps      = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/presProps"
	relViewProps      = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/viewProps"
	relTableStyles    = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/tableStyles"
)

// relationshipsXML is a relationships part.
func relationshipsXML(rels []relationship) string {
	var b strings.Builder
	b.WriteString(xmlHeader)
	b.WriteString(`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for _, r := range rels {
		fmt.Fprintf(&b, `<Relationship Id="%s" Type="%s" Target="%s"`, r.id, r.typ, esc(r.target))
		if r.external {
			b.WriteString(` TargetMode="External"`)
		}
		b.WriteString(`/>`)
	}
	b.WriteString(`</Relationships>`)
	return b.String()
}

// contentTypesXML is [Content_Types].xml: the default types of .rels and .xml parts, and the
// type of each part named in overrides (part name to type).
func contentTypesXML(overrides [][2]string) string {
	var b strings.Builder
	b.WriteString(xmlHeader)
	b.WriteString(`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">`)
	b.WriteString(`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>`)
	b.WriteString(`<Default Extension="xml" ContentType="application/xml"/>`)
	for _, o := range overrides {
		fmt.Fprintf(&b, `<Override PartName="%s" ContentType="%s"/>`, o[0], o[1])
	}
	b.WriteString(`</Types>`)
	return b.String()
}

// corePropsXML is docProps/core.xml, naming the document's title.
func corePropsXML(title string) string {
	return xmlHeader + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
		`xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>` + esc(title) + `</dc:title>` +
		`<dc:creator>Parley</dc:creator></cp:coreProperties>`
}

// contentTypeCoreProps is the type of docProps/core.xml.
const contentTypeCoreProps = "application/vnd.openxmlformats-package.core-properties+xml"

// templateNote is the note for the model when the call gives a template file (docx_template_file,
// pptx_template_file), which the plugin styles its file with and which is not read here.
func templateNote(a args, param string) string {
	if _, ok := a[param]; !ok {
		return ""
	}
	return fmt.Sprintf("(%s is not supported here: the file has the default styles.)", param)
}
