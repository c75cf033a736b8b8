//go:build !linux || !(amd64 || arm64)

package sandbox

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// New fails: the sandbox needs Linux namespaces and a seccomp filter for this architecture.
func New(context.Context, Options) (*Runner, error) {
	return nil, fmt.Errorf("%w: code nodes need Linux on amd64 or arm64, not %s/%s", ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

func (r *Runner) run(context.Context, Request, time.Duration) (Result, error) {
	return Result{}, execErr(KindUnavailable, "The code sandbox is not available on this platform.")
}
