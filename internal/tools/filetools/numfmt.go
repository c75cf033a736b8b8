package filetools

import "strings"

// Which number formats make dates, as openpyxl decides it (and so the plugin's pandas).

// builtinFormats are the built-in number formats that show dates or times (the others show
// numbers), by id, as openpyxl knows them. The locale-dependent ids (27 to 36, 50 to 81) are not
// in its table, so openpyxl reads numbers in them as numbers, and so does this.
var builtinFormats = map[int]string{
	14: "mm-dd-yy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy", 18: "h:mm AM/PM", 19: "h:mm:ss AM/PM",
	20: "h:mm", 21: "h:mm:ss", 22: "m/d/yy h:mm", 45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0",
}

// isDateFormat reports whether a format code shows a date or a time: its first section, without
// its quoted text and its bracketed parts other than elapsed hours, minutes and seconds, has a
// d, m, h, y or s that no "_" or "\" escapes.
func isDateFormat(code string) bool {
	stripped := stripFormat(firstSection(code))
	for i := range len(stripped) {
		if !strings.ContainsRune("dmhysDMHYS", rune(stripped[i])) {
			continue
		}
		if i == 0 || (stripped[i-1] != '_' && stripped[i-1] != '\\') {
			return true
		}
	}
	return false
}

// isTimedeltaFormat reports whether a format code shows elapsed time: its first section starts
// with [h], [hh], [m], [mm], [s] or [ss].
func isTimedeltaFormat(code string) bool {
	section := strings.ToLower(firstSection(code))
	for _, p := range []string{"[h]", "[hh]", "[m]", "[mm]", "[s]", "[ss]"} {
		if strings.HasPrefix(section, p) {
			return true
		}
	}
	return false
}

// firstSection is the part of a format code for positive numbers.
func firstSection(code string) string {
	s, _, _ := strings.Cut(code, ";")
	return s
}

// stripFormat removes quoted text and the bracketed parts (colours, locales, conditions) that
// do not start with h, m or s.
func stripFormat(s string) string {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			if j := strings.IndexByte(s[i+1:], '"'); j >= 0 {
				i += j + 1
				continue
			}
		case '[':
			if j := strings.IndexByte(s[i+1:], ']'); j >= 0 && (j == 0 || !strings.ContainsRune("hms", rune(s[i+1]))) {
				i += j + 1
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}
