package blob

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func put(t *testing.T, s Store, key, content string) {
	t.Helper()
	if _, _, err := s.Put(t.Context(), key, strings.NewReader(content), 1<<20); err != nil {
		t.Fatal(err)
	}
}

func TestDirKeysSkipsTemporaryAndInvalid(t *testing.T) {
	t.Parallel()
	d := newDir(t)
	put(t, d, "uploads/app/1", "a")
	put(t, d, "datasets/2", "b")
	put(t, d, "tools/app/3", "c")
	// A write that never finished, a stray dot file and a name no key can have.
	for _, p := range []string{".tmp/put-x", "uploads/.hidden", "uploads/bad name"} {
		if err := os.WriteFile(filepath.Join(d.Root(), filepath.FromSlash(p)), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	if err := d.Keys(t.Context(), func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"datasets/2", "tools/app/3", "uploads/app/1"}; !slices.Equal(keys, want) {
		t.Fatalf("Keys = %q, want %q", keys, want)
	}
}

func TestFallbackReadsLegacyAndWritesPrimary(t *testing.T) {
	t.Parallel()
	primary, legacy := newDir(t), newDir(t)
	f := Fallback{Primary: primary, Legacy: legacy}
	put(t, legacy, "old", "from before")
	put(t, f, "new", "written now")
	if got := readAll(t, legacy, "old"); string(got) != "from before" {
		t.Fatal("legacy changed")
	}
	rc, err := f.Open(t.Context(), "old")
	if err != nil {
		t.Fatalf("a legacy blob through the fallback: %v", err)
	}
	rc.Close()
	if _, err := legacy.Open(t.Context(), "new"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a new blob went to the legacy store: %v", err)
	}
	if got := readAll(t, primary, "new"); string(got) != "written now" {
		t.Fatalf("primary has %q", got)
	}
	if _, err := f.Open(t.Context(), "none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing blob: %v, want ErrNotFound", err)
	}
	if err := f.Delete(t.Context(), "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(t.Context(), "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Delete: %v, want ErrNotFound", err)
	}
}

func TestCopyIsIdempotent(t *testing.T) {
	t.Parallel()
	src, dst := newDir(t), newDir(t)
	big := bytes.Repeat([]byte("0123456789"), 100_000)
	put(t, src, "uploads/app/1", "one")
	put(t, src, "datasets/2", string(big))
	put(t, dst, "datasets/2", "already there") // never overwritten
	res, err := Copy(t.Context(), dst, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 1 || res.Present != 1 || res.Bytes != 3 {
		t.Fatalf("first Copy = %+v, want 1 copied (3 bytes), 1 present", res)
	}
	if got := readAll(t, dst, "uploads/app/1"); string(got) != "one" {
		t.Fatalf("copied blob = %q", got)
	}
	if got := readAll(t, dst, "datasets/2"); string(got) != "already there" {
		t.Fatal("Copy overwrote a blob the destination had")
	}
	put(t, src, "tools/app/3", "three")
	var seen []string
	res, err = Copy(t.Context(), dst, src, func(k string, copied bool) {
		if copied {
			seen = append(seen, k)
		}
	})
	if err != nil || res.Copied != 1 || res.Present != 2 || !slices.Equal(seen, []string{"tools/app/3"}) {
		t.Fatalf("second Copy = %+v, %v, copied %q; want only the new blob", res, err, seen)
	}
	if got := readAll(t, src, "uploads/app/1"); string(got) != "one" {
		t.Fatal("Copy changed the source")
	}
}
