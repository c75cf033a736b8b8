package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestInterpreterDirs: the directories a Python run mounts for the interpreter, for the layouts
// PARLEY_CODE_PYTHON may name. The sandbox test runs a real venv; this one covers the layouts
// a test machine has no interpreter for (an installation outside /usr, a venv of copies).
func TestInterpreterDirs(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	file := func(p, text string) string {
		t.Helper()
		p = filepath.Join(d, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(p, target string) string {
		t.Helper()
		p = filepath.Join(d, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	at := func(p string) string { return filepath.Join(d, p) }

	system, err := filepath.EvalSymlinks(DefaultPython)
	if err != nil {
		t.Skipf("SKIPPING: no %s: %v", DefaultPython, err)
	}
	// A venv of the system's interpreter, as python3 -m venv makes it.
	systemVenv := link("sysvenv/bin/python3", system)
	file("sysvenv/pyvenv.cfg", "home = "+filepath.Dir(system)+"\ninclude-system-site-packages = false\n")
	// An interpreter installed outside /usr, a venv linked to it, and one of copies (--copies).
	opt := file("opt/python3.12/bin/python3.12", "")
	optLink := link("opt/python3.12/bin/python3", "python3.12")
	linked := link("optvenv/bin/python3", opt)
	file("optvenv/pyvenv.cfg", "home = "+at("opt/python3.12/bin")+"\n")
	copied := file("copyvenv/bin/python3", "")
	file("copyvenv/pyvenv.cfg", "home = "+at("opt/python3.12/bin")+"\n")
	// pyvenv.cfg next to the executable, as Python also looks for it.
	flat := link("flatvenv/python3", system)
	file("flatvenv/pyvenv.cfg", "home = /usr/bin\n")

	for _, c := range []struct {
		name, python string
		ro           []string
		want         []string
	}{
		{"system", DefaultPython, nil, nil},
		{"venv of the system's python", systemVenv, nil, []string{at("sysvenv")}},
		{"installation outside /usr", optLink, nil, []string{at("opt/python3.12")}},
		{"venv linked outside /usr", linked, nil, []string{at("optvenv"), at("opt/python3.12")}},
		{"venv of copies", copied, nil, []string{at("copyvenv"), at("opt/python3.12")}},
		{"cfg next to the executable", flat, nil, []string{at("flatvenv")}},
		{"installation mounted already", linked, []string{at("opt")}, []string{at("optvenv")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := interpreterDirs(c.python, append(append([]string{}, systemDirs...), c.ro...))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	if _, err := interpreterDirs("bin/python3", systemDirs); err == nil {
		t.Fatal("a relative path was accepted")
	}
	if _, err := interpreterDirs(at("missing/bin/python3"), systemDirs); err == nil {
		t.Fatal("a missing interpreter was accepted")
	}
}
