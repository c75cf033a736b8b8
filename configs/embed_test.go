package configs

import (
	"bytes"
	"testing"
)

func TestSampleEmbedded(t *testing.T) {
	t.Parallel()
	if !bytes.Contains(Sample, []byte("providers:")) {
		t.Fatal("Sample does not look like parley.yaml")
	}
}
