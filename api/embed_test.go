package api

import "testing"

func TestLoadAndFormats(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	id := doc.Components.Schemas["ChatCompletionResponse"].Value.Properties["id"].Value
	for s, ok := range map[string]bool{
		"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11": true,
		"01890a5d-ac96-774b-bcce-b302099a8057": true, // v7
		"7B0B2B1C-5A4F-4F4E-9A55-3C0B5D0E9C11": true,
		"7b0b2b1c5a4f4f4e9a553c0b5d0e9c11":     false,
		"7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c1g": false,
		"7b0b2b1c-5a4f-4f4e-9a55_3c0b5d0e9c11": false,
		"":                                     false,
	} {
		if err := id.VisitJSON(s); (err == nil) != ok {
			t.Errorf("uuid %q: err %v, want ok=%v", s, err, ok)
		}
	}
	url := doc.Components.Schemas["FileReference"].Value.Properties["url"].Value
	for s, ok := range map[string]bool{"https://example.com/a.png": true, "a.png": false, "http://": false} {
		if err := url.VisitJSON(s); (err == nil) != ok {
			t.Errorf("uri %q: err %v, want ok=%v", s, err, ok)
		}
	}
}
