package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// systemDirs are the host directories every sandbox shows (read-only), beside the scratch /tmp.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// interpreterDirs returns the host directories the Python interpreter python needs mounted in
// the sandbox beyond dirs, which are mounted already: the virtual environment it belongs to,
// and the installation of the interpreter that environment (or python itself) runs when it
// lies elsewhere. A Debian python3, or a venv made from it, needs only /usr and its venv.
//
// Python finds its environment from the path it was started by, before symlinks are resolved
// (a venv's bin/python3 is a link to /usr/bin/python3.X): a pyvenv.cfg next to it or one
// directory up marks the environment's root, and the cfg's home names the base interpreter's
// directory, whose standard library the environment uses.
func interpreterDirs(python string, dirs []string) ([]string, error) {
	if !filepath.IsAbs(python) {
		return nil, fmt.Errorf("python3 (%s) must be an absolute path", python)
	}
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		return nil, err
	}
	var want []string
	root, home := venvOf(python)
	if root != "" {
		want = append(want, root)
	}
	want = append(want, installation(filepath.Dir(real)))
	if filepath.IsAbs(home) {
		want = append(want, installation(home))
	}
	var out []string
	for _, d := range want {
		if under(d, dirs) || under(d, out) {
			continue
		}
		if d == "/" {
			return nil, fmt.Errorf("python3 (%s) would need the whole root file system in the sandbox; install it under a directory of its own", python)
		}
		out = append(out, d)
	}
	return out, nil
}

// venvOf returns the root of the virtual environment python belongs to and the home its
// pyvenv.cfg names, or empty strings when it belongs to none.
func venvOf(python string) (root, home string) {
	for _, d := range []string{filepath.Dir(python), filepath.Dir(filepath.Dir(python))} {
		f, err := os.Open(filepath.Join(d, "pyvenv.cfg"))
		if err != nil {
			continue
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "=")
			if ok && strings.TrimSpace(k) == "home" {
				home = filepath.Clean(strings.TrimSpace(v))
			}
		}
		return d, home
	}
	return "", ""
}

// installation is the directory an interpreter whose executable is in dir is installed in:
// the one above dir when dir is a bin (its lib/ is beside it), else dir itself.
func installation(dir string) string {
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// under reports whether path is one of dirs or inside one of them.
func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}
