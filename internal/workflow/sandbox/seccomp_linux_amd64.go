package sandbox

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// archDenied are the process-creating calls only this architecture has.
var archDenied = []uintptr{unix.SYS_FORK, unix.SYS_VFORK}
