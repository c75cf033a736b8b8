package conformance

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/store/storetest"
)

// TestCLI runs the administration commands against a fresh database on each engine.
func TestCLI(t *testing.T) {
	if binary == "" {
		t.Skip("needs the locally built binary")
	}
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		p := &Parley{engine: e, env: cliEnv(e)}
		for range 2 { // migrate is idempotent
			p.CLI(t, "migrate")
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"keys", "create"}, "exactly one of --app NAME or --knowledge"},
			{[]string{"keys", "create", "--app", "chatbot", "--knowledge"}, "exactly one of"},
			{[]string{"keys", "create", "--app", "nope"}, `no app named "nope"`},
			{[]string{"keys", "revoke", "7b0b2b1c-5a4f-4f4e-9a55-3c0b5d0e9c11"}, "no active key"},
			{[]string{"serve", "--addr", "not-an-address"}, "PARLEY_ADDR"},
		} {
			out, err := p.run(tc.args...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("parley %s: err %v, output %q; want failure mentioning %q", strings.Join(tc.args, " "), err, out, tc.want)
			}
		}
		app := p.CLI(t, "keys", "create", "--app", "chatbot")
		kb := p.CLI(t, "keys", "create", "--knowledge")
		if !strings.HasPrefix(app, "app-") || !strings.HasPrefix(kb, "dataset-") || strings.ContainsAny(app+kb, " \n") {
			t.Fatalf("keys create printed %q and %q; want only the key", app, kb)
		}
		list := p.CLI(t, "keys", "list")
		if strings.Contains(list, app) || strings.Contains(list, kb) {
			t.Fatal("keys list shows a secret")
		}
		if !strings.Contains(list, "chatbot") || strings.Count(list, "\n") != 2 {
			t.Fatalf("keys list:\n%s", list)
		}
	})
}

func cliEnv(e storetest.Engine) []string {
	return []string{
		"PARLEY_DATA_DIR=" + e.DataDir,
		"PARLEY_DATABASE_URL=" + e.DatabaseURL,
		"PARLEY_CONFIG=testdata/parley.yaml",
		"CONFORMANCE_OPENAI_KEY=sk-conformance",
	}
}

// run runs the binary and returns its combined output and error.
func (p *Parley) run(args ...string) (string, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = p.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
