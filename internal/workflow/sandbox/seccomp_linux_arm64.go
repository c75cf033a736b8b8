package sandbox

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// archDenied is empty: arm64 has no fork or vfork system calls, only clone.
var archDenied = []uintptr{}
