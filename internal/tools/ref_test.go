package tools

import (
	"regexp"
	"strings"
	"testing"
)

func TestModelName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	long := strings.Repeat("a", 70)
	taken := map[string]bool{"get_weather": true, strings.Repeat("a", 64): true, "x_2": true}
	for in, want := range map[string]string{
		"current_time":     "current_time",
		"get.weather":      "get_weather_2",
		"get weather":      "get_weather_2",
		"ä-b":              "_-b",
		"":                 "tool",
		long:               strings.Repeat("a", 62) + "_2",
		"x 2":              "x_2_2",
		"files/read_file!": "files_read_file_",
	} {
		got := ModelName(in, taken)
		if got != want || !valid.MatchString(got) {
			t.Errorf("ModelName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRefProvider(t *testing.T) {
	if p := (Ref{ProviderID: "id", ProviderName: "n"}).Provider(); p != "id" {
		t.Errorf("Provider = %q", p)
	}
	if p := (Ref{ProviderName: "n"}).Provider(); p != "n" {
		t.Errorf("Provider = %q", p)
	}
}
