package parleytest

import (
	"strings"
	"testing"
	"time"
)

func TestReadLog(t *testing.T) {
	log := `{"msg":"serving apps"}` + "\n" + "not json\n" + strings.Repeat("x", MaxLogLine+10) + "\n" +
		`{"msg":"listening","addr":"127.0.0.1:5001"}` + "\n"
	var lines []string
	addr, done := ReadLog(strings.NewReader(`{"msg":"listening","addr":"127.0.0.1:1"}`+"\n"+log), func(l []byte) { lines = append(lines, string(l)) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ReadLog did not end with its log")
	}
	if a := <-addr; a != "127.0.0.1:1" {
		t.Errorf("addr %q, want the first listening line's", a)
	}
	// The scanner stops at the over-long line; what follows is drained, not passed on.
	if len(lines) != 3 || lines[1] != `{"msg":"serving apps"}` || lines[2] != "not json" {
		t.Errorf("lines %q", lines)
	}
}
